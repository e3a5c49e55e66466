"""REST for chatbots, their documents (upload + background ingest) and ingest jobs."""

from __future__ import annotations

import mimetypes

import anyio.to_thread
from fastapi import APIRouter, FastAPI, File, HTTPException, Request, Response, UploadFile

from ..service import AgentChatService
from .auth import admin_scope, chat_scope, upload_rate
from .schemas import ChatbotCreate, ChatbotUpdate, chatbot_json, job_json
from .uploads import UploadError, check_content, safe_filename

router = APIRouter(prefix="/api", tags=["chatbots"])
SNIFF_BYTES = 4096


def _service(request: Request) -> AgentChatService:
    return request.app.state.service


@router.get("/chatbots", dependencies=[chat_scope])
def list_chatbots(request: Request) -> list[dict]:
    return [chatbot_json(b) for b in _service(request).list_chatbots()]


@router.post("/chatbots", status_code=201, dependencies=[admin_scope])
def create_chatbot(body: ChatbotCreate, request: Request) -> dict:
    bot = _service(request).create_chatbot(body.name, body.settings, language=body.language,
                                           description=body.description)
    return chatbot_json(bot)


@router.get("/chatbots/{name}", dependencies=[chat_scope])
def get_chatbot(name: str, request: Request) -> dict:
    return chatbot_json(_service(request).get_chatbot(name))


@router.patch("/chatbots/{name}", dependencies=[admin_scope])
def update_chatbot(name: str, body: ChatbotUpdate, request: Request) -> dict:
    bot = _service(request).update_chatbot(name, settings=body.settings, language=body.language,
                                           description=body.description)
    return chatbot_json(bot)


@router.delete("/chatbots/{name}", status_code=204, dependencies=[admin_scope])
def delete_chatbot(name: str, request: Request) -> None:
    _service(request).delete_chatbot(name)


# Documents are rows in the database (store/job_queue.py), so every worker lists and serves
# the same ones, whichever worker took the upload.
@router.get("/chatbots/{name}/documents", dependencies=[chat_scope])
def list_documents(name: str, request: Request) -> list[dict]:
    return [{"name": d.name, "bytes": d.size} for d in _service(request).documents(name)]


@router.get("/chatbots/{name}/documents/{filename}", dependencies=[chat_scope])
def get_document(name: str, filename: str, request: Request) -> Response:
    try:
        safe = safe_filename(filename)
    except UploadError:
        raise HTTPException(404, "no such document") from None
    content = _service(request).document(name, safe) if safe == filename else None
    if content is None:
        raise HTTPException(404, "no such document")
    kind = mimetypes.guess_type(safe)[0] or "application/octet-stream"
    return Response(content, media_type=kind,
                    headers={"Content-Disposition": f'attachment; filename="{safe}"'})


async def upload_documents(name: str, request: Request,
                           files: list[UploadFile] = File(...)) -> dict:
    """Store the files as the chatbot's documents and queue the job that ingests them."""
    service = _service(request)
    await anyio.to_thread.run_sync(service.get_chatbot, name)
    # Check every file before storing any, so a bad file in a batch changes nothing.
    checked: list[tuple[str, bytes]] = []
    for upload in files:
        filename = safe_filename(upload.filename or "")
        content = await upload.read()       # bounded by the route's max_body_size
        check_content(filename, content[:SNIFF_BYTES])
        checked.append((filename, content))
    job = await anyio.to_thread.run_sync(service.upload, name, checked)
    return job_json(job)


def add_upload_route(app: FastAPI, max_upload_bytes: int) -> None:
    """The upload route has its own, larger body limit than the rest of the API."""
    app.post("/api/chatbots/{name}/documents", status_code=202, tags=["chatbots"],
             dependencies=[admin_scope, upload_rate],
             max_body_size=max_upload_bytes)(upload_documents)


@router.get("/chatbots/{name}/jobs", dependencies=[chat_scope])
def list_jobs(name: str, request: Request) -> list[dict]:
    return [job_json(j) for j in _service(request).jobs(name)]


@router.get("/jobs/{job_id}", dependencies=[chat_scope])
def get_job(job_id: str, request: Request) -> dict:
    return job_json(_service(request).store.get_job(job_id))
