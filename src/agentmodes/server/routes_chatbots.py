"""REST for chatbots, their documents (upload + background ingest) and ingest jobs."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import anyio.to_thread
from fastapi import APIRouter, FastAPI, File, HTTPException, Request, UploadFile
from fastapi.responses import FileResponse

from ..service import AgentChatService
from .auth import admin_scope, chat_scope, upload_rate
from .schemas import ChatbotCreate, ChatbotUpdate, chatbot_json, job_json
from .uploads import UploadError, check_content, safe_filename, target_path

router = APIRouter(prefix="/api", tags=["chatbots"])
SNIFF_BYTES = 4096
COPY_CHUNK = 1 << 16


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


@router.get("/chatbots/{name}/documents", dependencies=[chat_scope])
def list_documents(name: str, request: Request) -> list[dict]:
    service = _service(request)
    folder = service.upload_dir(service.get_chatbot(name))
    return [{"name": p.name, "bytes": p.stat().st_size} for p in sorted(folder.iterdir())
            if p.is_file() and not p.name.startswith(".")]


@router.get("/chatbots/{name}/documents/{filename}", dependencies=[chat_scope])
def get_document(name: str, filename: str, request: Request) -> FileResponse:
    service = _service(request)
    folder = service.upload_dir(service.get_chatbot(name))
    try:
        path = target_path(folder, filename)
    except UploadError:
        raise HTTPException(404, "no such document") from None
    if path.name != filename or not path.is_file():
        raise HTTPException(404, "no such document")
    return FileResponse(path, filename=path.name)


async def upload_documents(name: str, request: Request,
                           files: list[UploadFile] = File(...)) -> dict:
    """Store the files under the chatbot's upload dir and start a background ingest job."""
    service = _service(request)
    bot = await anyio.to_thread.run_sync(service.get_chatbot, name)
    folder = service.upload_dir(bot)
    # Check every file before writing any, so a bad file in a batch changes nothing.
    checked: list[tuple[UploadFile, Path]] = []
    for upload in files:
        filename = safe_filename(upload.filename or "")
        head = await upload.read(SNIFF_BYTES)
        check_content(filename, head)
        await upload.seek(0)
        checked.append((upload, target_path(folder, filename)))
    saved = [await anyio.to_thread.run_sync(_save, upload, path) for upload, path in checked]
    job = await anyio.to_thread.run_sync(service.start_ingest, name, saved)
    return job_json(job)


def add_upload_route(app: FastAPI, max_upload_bytes: int) -> None:
    """The upload route has its own, larger body limit than the rest of the API."""
    app.post("/api/chatbots/{name}/documents", status_code=202, tags=["chatbots"],
             dependencies=[admin_scope, upload_rate],
             max_body_size=max_upload_bytes)(upload_documents)


def _save(upload: UploadFile, path: Path) -> Path:
    # Write to a temp file in the same dir, then rename: a crash never leaves half a document
    # where the next ingest would read it.
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".upload-")
    with os.fdopen(fd, "wb") as out:
        while chunk := upload.file.read(COPY_CHUNK):
            out.write(chunk)
    os.replace(tmp, path)
    return path


@router.get("/chatbots/{name}/jobs", dependencies=[chat_scope])
def list_jobs(name: str, request: Request) -> list[dict]:
    return [job_json(j) for j in _service(request).jobs(name)]


@router.get("/jobs/{job_id}", dependencies=[chat_scope])
def get_job(job_id: str, request: Request) -> dict:
    return job_json(_service(request).store.get_job(job_id))
