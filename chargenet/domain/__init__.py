"""Pure domain types: no I/O, no clock reads, no database. Everything here is tested with plain values."""
