"""The authorization server: client credentials grants, RFC 9068 access tokens, groups and scopes.

The modules `tokens`, `secrets`, `permissions`, `token_request` and `limiter` are sans-IO cores: they take
values and `now`, and import nothing that does I/O.
"""
