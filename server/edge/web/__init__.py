"""The web view on ``nardy serve --http-port``: the read-only pages and ``/metrics``
(:mod:`server.edge.web.pages`), the public calls a browser makes as JSON
(:mod:`server.edge.web.api`) and the pages a person plays on (:mod:`server.edge.web.play`)."""

from server.edge.web.pages import WebView

__all__ = ["WebView"]
