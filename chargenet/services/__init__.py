"""Use cases shared by the API, the console and the command line: parse outside, call here, render outside.

Every use case that acts for someone takes the caller (`callers.Caller`) and answers for its reach itself (an
object it may not see is `NotFound`); lists answer one keyset `pages.Page`; results are frozen, typed views
(`views.View`). The running parts are reached only through `chargenet.ports`.
"""
