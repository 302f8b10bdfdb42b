"""Use cases shared by the API, the console and the CLI: parse outside, call here, render outside."""
