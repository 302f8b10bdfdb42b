"""Modbus energy meters: charging sessions detected from meter readings.

`profiles/` (register maps and decoding), `readings.py`, `detect.py` (session detector) and `bus.py` (bus timing
and scheduling) are sans-IO cores; the pollers, services and simulators around them do the I/O.
"""
