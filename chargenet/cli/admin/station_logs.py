"""`chargenet admin station request-log|logs|download-log`: a station's logs, as the API has them
(`services.station_logs`).

`request-log` travels to the station through the store like every station command (`chargenet.edge.relay`); the
station then uploads its file to the serving process's `/uploads` (CHARGENET_UPLOAD_URL, else the public URL).
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from chargenet.cli.common import add_verb, emit, emit_views, run_with_context

if TYPE_CHECKING:
    from chargenet.context import AppContext
    from chargenet.services.station_logs import LogFile, LogRequestAnswer, StationLogs


def register_verbs(verbs: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the log verbs to `admin station`."""
    request = add_verb(verbs, "request-log", "ask a station to upload its diagnostics log", _request)
    request.add_argument("station_id", metavar="STATION_ID")
    listed = add_verb(verbs, "logs", "list the logs a station uploaded", _list)
    listed.add_argument("station_id", metavar="STATION_ID")
    download = add_verb(verbs, "download-log", "copy a log a station uploaded to a file", _download)
    download.add_argument("station_id", metavar="STATION_ID")
    download.add_argument("log_id", metavar="LOG_ID", type=int)
    download.add_argument("--output", required=True, metavar="FILE", help="where to write it")


def _request(args: argparse.Namespace) -> None:
    from chargenet.edge.relay import RelayedCommands
    from chargenet.services import station_logs
    from chargenet.services.callers import OPERATOR

    async def run(context: AppContext) -> LogRequestAnswer:
        settings = context.settings
        return await station_logs.request_log(
            context.store.read,
            context.store.transaction,
            RelayedCommands(context.store, context.clock),
            OPERATOR,
            station_id=args.station_id,
            upload_base=settings.upload_url or settings.public_url,
            now=context.clock.now(),
        )

    answer = run_with_context(args, run)
    named = f", file {answer.file_name}" if answer.file_name else ""
    text = f"{args.station_id} answered the log request {answer.request_id}: {answer.status}{named}"
    emit(args, answer.model_dump(mode="json", by_alias=True), text)


def _list(args: argparse.Namespace) -> None:
    from chargenet.services import station_logs
    from chargenet.services.callers import OPERATOR

    async def run(context: AppContext) -> StationLogs:
        async with context.store.read() as session:
            return await station_logs.list_logs(session, OPERATOR, args.station_id)

    emit_views(args, run_with_context(args, run).items, ["id", "file_name", "size", "received_at", "sha256"])


def _download(args: argparse.Namespace) -> None:
    from chargenet.services import station_logs
    from chargenet.services.callers import OPERATOR

    async def run(context: AppContext) -> LogFile:
        async with context.store.read() as session:
            return await station_logs.log_file(
                session, OPERATOR, context.settings.data_dir, args.station_id, args.log_id
            )

    found = run_with_context(args, run)
    shutil.copyfile(found.path, Path(args.output))
    view = found.view
    emit(
        args,
        {"id": view.id, "fileName": view.file_name, "size": view.size, "sha256": view.sha256, "output": args.output},
        f"log {view.id} of {args.station_id} ({view.file_name}, {view.size} bytes) written to {args.output}",
    )
