"""Where stations upload the logs asked of them: `POST` or `PUT /uploads/{token}/{fileName}`, outside the API.

The token in the path is the station's only credential (a one-time location, `domain.log_uploads`): the body is
the file's bytes as sent, streamed to disk and counted against the slot's bound while it is read. Answers:
201 with the file's size and SHA-256; 404 for an unknown token; 410 for a location that took its file already or
expired; 413 past the bound; 400 for a file name that names no file. Every refusal is an RFC 9457 problem, logged,
and leaves nothing stored.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from chargenet.api.problems import problem
from chargenet.context import AppContext
from chargenet.domain.log_uploads import UPLOADS_PATH, SlotRefusal
from chargenet.errors import InputTooLarge, InvalidInput, LogUploadRefused
from chargenet.services import station_logs

DEFAULT_FILE_NAME = "log"  # a station that uploads to the location itself, adding no name


def upload_routes(context: AppContext) -> list[Route]:
    async def upload(request: Request) -> Response:
        token = request.path_params["token"]
        file_name = request.path_params.get("file_name") or DEFAULT_FILE_NAME
        try:
            received = await station_logs.receive(
                context.store.read,
                context.store.transaction,
                context.settings.data_dir,
                context.clock,
                token=token,
                file_name=file_name,
                body=request.stream(),
            )
        except LogUploadRefused as refused:
            status = 404 if refused.reason == SlotRefusal.UNKNOWN else 410
            return problem(status, "Not Found" if status == 404 else "Gone", str(refused))
        except InputTooLarge as exc:
            return problem(413, "Content Too Large", f"a log is at most {exc.limit} bytes")
        except InvalidInput as exc:
            return problem(400, "Bad Request", str(exc))
        body = {"fileName": received.file_name, "size": received.size, "sha256": received.sha256}
        return JSONResponse(body, status_code=201)

    methods = ["POST", "PUT"]
    return [
        Route(UPLOADS_PATH + "/{token}/", upload, methods=methods),
        Route(UPLOADS_PATH + "/{token}/{file_name:path}", upload, methods=methods),
    ]
