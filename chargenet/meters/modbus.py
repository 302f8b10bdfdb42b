"""The Modbus shell: one pymodbus client per TCP endpoint or RTU bus, reading profiles into Readings.

pymodbus serializes the requests of one client (a lock per request), which is what an RS-485 bus needs; TCP
endpoints get a client each, so they are polled in parallel. Every client is built with the bus's own timeout
and retries (`BusSettings`), never pymodbus's 3 s x 4 defaults. All pymodbus failures are mapped here, in one
place, to `MeterUnreachable` with a `ReadFailure` saying how: no valid answer (silence, or a reply from another
unit id, which pymodbus's framer drops), a reply whose CRC did not check (dropped too, so also a timeout to
pymodbus: on RTU the link keeps the last bytes the bus brought for the request and checks their CRC itself, so
that a noisy line is told apart from a silent meter), an exception response, no connection, or an answer that
does not fit the profile.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pymodbus import FramerType, ModbusException
from pymodbus.client import AsyncModbusSerialClient, AsyncModbusTcpClient
from pymodbus.exceptions import ConnectionException
from pymodbus.framer import FramerRTU

from chargenet.meters.bus import BusSettings, TcpEndpoint, Transport
from chargenet.meters.errors import MeterReplyInvalid, MeterUnreachable, ReadFailure
from chargenet.meters.profiles import FunctionCode, Profile
from chargenet.meters.readings import Reading


class ModbusLink:
    """One open pymodbus client; `read` polls one meter on it.

    `read` connects when the link is down, and the poller's backoff paces the attempts, so pymodbus's own
    reconnecting is off (`reconnect_delay=0`): with both, a peer that drops the line (anything but a meter on the
    port, say) got a connection from each, and the one pymodbus no longer held was never closed, one socket leaked a
    poll."""

    def __init__(self, transport: Transport, settings: BusSettings) -> None:
        self.transport = transport
        self.settings = settings
        self._heard = b""  # on RTU, what the bus brought for the request in flight
        self._client: Any
        if isinstance(transport, TcpEndpoint):
            self._client = AsyncModbusTcpClient(
                transport.host,
                port=transport.port,
                timeout=settings.timeout_s,
                retries=settings.retries,
                reconnect_delay=0,
            )
        else:
            self._client = AsyncModbusSerialClient(
                transport.device,
                framer=FramerType.RTU,
                baudrate=transport.line.baudrate,
                parity=transport.line.parity.value,
                stopbits=transport.line.stopbits,
                bytesize=8,
                timeout=settings.timeout_s,
                retries=settings.retries,
                reconnect_delay=0,
                trace_packet=self._hear,
            )

    def _hear(self, sending: bool, packet: bytes) -> bytes:
        # pymodbus hands over the whole receive buffer each time bytes arrive, so the last one is the frame.
        if not sending:
            self._heard = packet
        return packet

    def _silence_kind(self) -> ReadFailure:
        heard = self._heard
        if len(heard) >= FramerRTU.MIN_SIZE and not FramerRTU.check_CRC(heard[:-2], int.from_bytes(heard[-2:], "big")):
            return ReadFailure.CRC
        return ReadFailure.TIMEOUT

    @property
    def connected(self) -> bool:
        return bool(self._client.connected)

    async def connect(self) -> bool:
        try:
            return bool(await self._client.connect())
        except (OSError, ModbusException):
            return False

    def close(self) -> None:
        self._client.close()

    async def read(self, meter_id: str, profile: Profile, unit_id: int) -> Reading:
        """Poll one meter: the profile's read plan, decoded. Raises MeterUnreachable or MeterReplyInvalid."""
        if not self._client.connected and not await self.connect():
            raise MeterUnreachable(meter_id, f"cannot connect to {self.transport.key}", ReadFailure.CONNECT)
        replies: list[list[int]] = []
        read = (
            self._client.read_holding_registers
            if profile.function_code is FunctionCode.READ_HOLDING_REGISTERS
            else self._client.read_input_registers
        )
        for block in profile.read_plan:
            if self.settings.inter_request_delay_s:
                # Bus physics, not service time: some meters need a quiet line before the next request.
                await asyncio.sleep(self.settings.inter_request_delay_s)
            self._heard = b""
            try:
                response = await read(block.address, count=block.count, device_id=unit_id)
            except ConnectionException as exc:
                raise MeterUnreachable(
                    meter_id, f"connection to {self.transport.key} lost", ReadFailure.CONNECT
                ) from exc
            except (TimeoutError, ModbusException, OSError) as exc:
                kind = self._silence_kind()
                message = "a reply with a broken CRC" if kind is ReadFailure.CRC else "no valid reply"
                raise MeterUnreachable(meter_id, f"{message} from unit {unit_id}", kind) from exc
            if response.isError():
                code = getattr(response, "exception_code", "?")
                raise MeterUnreachable(
                    meter_id, f"unit {unit_id} answered with Modbus exception {code}", ReadFailure.EXCEPTION
                )
            replies.append(list(response.registers))
        try:
            return profile.decode(replies)
        except MeterReplyInvalid as exc:
            raise MeterUnreachable(meter_id, exc.message, ReadFailure.INVALID_REPLY) from exc
