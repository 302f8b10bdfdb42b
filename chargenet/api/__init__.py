"""The REST API at `{base_url}` (`/api/v1`): routes parse, check permission, call a service, render."""
