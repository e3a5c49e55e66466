"""Read-only views of a chatbot's knowledge base: its documents and the passages answers cite.

    GET /api/chatbots/{name}/kb/documents                 every document (uploads and CLI-ingested)
    GET /api/chatbots/{name}/kb/documents/{doc_id}        one document's passages, paged
    GET /api/chatbots/{name}/kb/passages/{chunk_id}       a cited passage with its neighbours

These serve the page's source viewer: a citation opens the passage it points at, highlighted
in its document, whether the document was uploaded or ingested with `agentmodes ingest`
(the upload routes only know uploaded files). Server-side paths never leave the server: a
document is named by its path below the folder it was ingested from, and `upload` names the
file to download when it is one of the chatbot's uploads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import APIRouter, HTTPException, Query, Request

from ..service import AgentChatService
from .auth import chat_scope

router = APIRouter(prefix="/api/chatbots/{name}/kb", tags=["knowledge base"],
                   dependencies=[chat_scope])
MAX_PAGE = 500


def _kb_of(request: Request, name: str) -> tuple[Any, Path]:
    service: AgentChatService = request.app.state.service
    bot = service.get_chatbot(name)
    kb = service.knowledge(bot)
    if kb is None:
        raise HTTPException(404, f"chatbot {name!r} has no knowledge base")
    return kb, service.upload_dir(bot).resolve()


def _document_json(doc: Any, uploads: Path) -> dict[str, Any]:
    data = doc.as_dict()
    path = Path(data.pop("path"))
    data["upload"] = path.name if path.parent == uploads else None
    return data


@router.get("/documents")
def list_kb_documents(name: str, request: Request) -> list[dict]:
    kb, uploads = _kb_of(request, name)
    docs = sorted(kb.documents(), key=lambda d: (d.name.casefold(), d.id))
    return [_document_json(d, uploads) for d in docs]


@router.get("/documents/{doc_id}")
def get_kb_document(name: str, doc_id: int, request: Request,
                    offset: int = Query(0, ge=0, le=10**9),
                    limit: int = Query(200, ge=1, le=MAX_PAGE)) -> dict:
    kb, uploads = _kb_of(request, name)
    doc = kb.document(doc_id)
    if doc is None:
        raise HTTPException(404, "no such document in this knowledge base")
    return {**_document_json(doc, uploads), "offset": offset,
            "passages": [p.as_dict() for p in kb.passages(doc_id, offset, limit)]}


@router.get("/passages/{chunk_id}")
def get_passage(name: str, chunk_id: int, request: Request,
                context: int = Query(3, ge=0, le=50)) -> dict:
    """The passage `chunk_id` and up to `context` passages either side, in reading order."""
    kb, uploads = _kb_of(request, name)
    passage = kb.passage(chunk_id)
    doc = kb.document(passage.doc_id) if passage else None
    if passage is None or doc is None:
        raise HTTPException(404, "no such passage in this knowledge base (re-ingested since?)")
    # Positions are the chunker's 0-based running numbers: the index in reading order.
    start = int(passage.position) - context
    passages = kb.passages(doc.id, max(start, 0), 2 * context + 1 + min(start, 0))
    return {**_document_json(doc, uploads), "chunk_id": chunk_id,
            "offset": max(start, 0), "passages": [p.as_dict() for p in passages]}
