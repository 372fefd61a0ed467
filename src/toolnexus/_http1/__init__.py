"""Our HTTP/1.1 client transport for httpx2: connection pool, wire parsing, asyncio protocol."""

from toolnexus._http1._transport import Http1Transport

__all__ = ["Http1Transport"]
