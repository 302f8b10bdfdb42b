"""chargenet: EV charging network service.

OCPP 1.6J edge controller, Modbus meters, an OAuth 2.0 authorization server, a bearer-protected
REST API and ordered, signed webhooks, in one process that several instances can share a database with.
"""

__version__ = "0.1.0"
