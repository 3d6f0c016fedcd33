"""A loopback TCP proxy that refuses service (closes every connection at once)
until a flag file exists, then forwards to the upstream port: an SQS outage
that ends on cue. Usage: toggle_proxy.py LISTEN_PORT UPSTREAM_PORT FLAG_FILE"""

import asyncio
import os
import sys

LISTEN, UPSTREAM, FLAG = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]


async def pipe(reader, writer):
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


async def handle(reader, writer):
    if not os.path.exists(FLAG):
        writer.close()
        return
    up_reader, up_writer = await asyncio.open_connection("127.0.0.1", UPSTREAM)
    await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))


async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", LISTEN)
    async with server:
        await server.serve_forever()


asyncio.run(main())
