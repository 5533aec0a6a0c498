"""Downloading what people attach (voice, images, files) through the authenticated media API, and sending files.

Homeservers serve new media only to authenticated requests (`/_matrix/client/v1/media/download`).
In an encrypted room the file itself is encrypted too (`content.file` holds the key, IV and hash);
it is decrypted here, after the hash is checked. A download larger than the limit is refused without
reading more than the limit.

`send_file` uploads a file and posts it as `m.image` or `m.file`, `send_voice` a recording as a voice message
(`mindroom.matrix.voice`): in an encrypted room the file is encrypted before it leaves (AES-CTR, the key and
hash in the event, which is itself encrypted).
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import nio
from nio.crypto.attachments import decrypt_attachment, encrypt_attachment

from mindroom.matrix.content import message_content
from mindroom.matrix.errors import MatrixRequestError
from mindroom.matrix.transport import guard_transport, quote_path
from mindroom.matrix.voice import VOICE_MIMETYPE, VoiceAudio, voice_content

__all__ = ["MediaFile", "MediaMethods", "MediaTooLargeError", "media_source"]

_DOWNLOAD_PATH = "/_matrix/client/v1/media/download/"
_CHUNK = 64 * 1024


class MediaTooLargeError(MatrixRequestError):
    """The attachment is larger than the daemon takes."""


@dataclass(frozen=True, slots=True)
class MediaFile:
    """A downloaded (and, where it was, decrypted) attachment."""

    data: bytes
    name: str
    mimetype: str | None


def media_source(content: Mapping[str, Any]) -> tuple[str, Mapping[str, Any] | None] | None:
    """The `mxc://` URL of a message's attachment, and its encryption info when the file is encrypted."""
    encrypted = content.get("file")
    if isinstance(encrypted, dict) and isinstance(encrypted.get("url"), str):
        return encrypted["url"], encrypted
    url = content.get("url")
    return (url, None) if isinstance(url, str) else None


class MediaMethods:
    """The media part of a bot's Matrix client."""

    _nio: nio.AsyncClient

    async def room_needs_encryption(self, room_id: str) -> bool:
        """Whether what is sent to `room_id` must be encrypted (the client answers)."""
        raise NotImplementedError

    async def send_event(
        self, room_id: str, event_type: str, content: Mapping[str, Any], *, txn_id: str | None = None
    ) -> str:
        """Send a room event (the client's, encrypted in an encrypted room)."""
        raise NotImplementedError

    async def send_file(
        self,
        room_id: str,
        data: bytes,
        name: str,
        mimetype: str,
        *,
        thread_root: str | None = None,
        reply_to: str | None = None,
        txn_id: str | None = None,
    ) -> str:
        """Upload `data` (encrypted first in an encrypted room) and post it as `m.image` or `m.file`."""
        media: dict[str, Any] = {"filename": name, "info": {"mimetype": mimetype, "size": len(data)}}
        media.update(await self._upload(room_id, data, name, mimetype))
        msgtype = "m.image" if mimetype.startswith("image/") else "m.file"
        content = message_content(
            name, msgtype=msgtype, thread_root=thread_root, reply_to=reply_to, extra_content=media
        )
        return await self.send_event(room_id, "m.room.message", content, txn_id=txn_id)

    async def send_voice(
        self,
        room_id: str,
        audio: VoiceAudio,
        body: str,
        *,
        thread_root: str | None = None,
        reply_to: str | None = None,
        txn_id: str | None = None,
    ) -> str:
        """Upload an Ogg/Opus recording (encrypted first in an encrypted room) and post it as a voice message."""
        media = await self._upload(room_id, audio.data, "voice-message.ogg", VOICE_MIMETYPE)
        content = message_content(
            body,
            msgtype="m.audio",
            thread_root=thread_root,
            reply_to=reply_to,
            extra_content=voice_content(audio, body, media),
        )
        return await self.send_event(room_id, "m.room.message", content, txn_id=txn_id)

    async def _upload(self, room_id: str, data: bytes, name: str, mimetype: str) -> dict[str, Any]:
        """Upload a file; the event fields naming it (`url`, or `file` with its keys in an encrypted room)."""
        encrypted = await self.room_needs_encryption(room_id)
        payload, keys = encrypt_attachment(data) if encrypted else (data, None)
        response, _ = await guard_transport(
            self._nio.upload(
                io.BytesIO(payload),
                "application/octet-stream" if encrypted else mimetype,
                name,
                filesize=len(payload),
            ),
            "upload media",
        )
        if not isinstance(response, nio.UploadResponse):
            raise MatrixRequestError("upload media", None, str(getattr(response, "message", response)))
        if keys is not None:
            return {"file": {**keys, "url": response.content_uri, "mimetype": mimetype}}
        return {"url": response.content_uri}

    async def download_media(self, content: Mapping[str, Any], max_bytes: int) -> MediaFile:
        """Download a message's attachment (decrypted when it is encrypted); `MediaTooLargeError` past `max_bytes`."""
        source = media_source(content)
        if source is None:
            raise MatrixRequestError("download media", None, "the message has no attachment")
        url, encryption = source
        server, _, media_id = url.removeprefix("mxc://").partition("/")
        if not server or not media_id:
            raise MatrixRequestError("download media", None, f"not a media URL: {url!r}")
        data = await self._fetch(f"{_DOWNLOAD_PATH}{quote_path(server)}/{quote_path(media_id)}", max_bytes)
        if encryption is not None:
            data = _decrypt(data, encryption)
        info: Mapping[str, Any] = content["info"] if isinstance(content.get("info"), dict) else {}
        mimetype = info.get("mimetype") if isinstance(info.get("mimetype"), str) else None
        name = content.get("filename") or content.get("body")
        return MediaFile(data, name if isinstance(name, str) and name else media_id, mimetype)

    async def _fetch(self, path: str, max_bytes: int) -> bytes:
        headers = {"Authorization": f"Bearer {self._nio.access_token}"}

        async def send() -> tuple[int, bytes]:
            response = await self._nio.send("GET", path, None, headers)
            async with response:
                declared = response.content_length
                if declared is not None and declared > max_bytes:
                    raise MediaTooLargeError("download media", None, f"{declared} bytes (limit {max_bytes})")
                chunks: list[bytes] = []
                size = 0
                async for chunk in response.content.iter_chunked(_CHUNK):
                    size += len(chunk)
                    if size > max_bytes:
                        raise MediaTooLargeError("download media", None, f"over {max_bytes} bytes")
                    chunks.append(chunk)
                return int(response.status), b"".join(chunks)

        status, data = await guard_transport(send(), "download media")
        if not 200 <= status < 300:
            raise MatrixRequestError("download media", None, f"HTTP {status}", status)
        return data


def _decrypt(data: bytes, encryption: Mapping[str, Any]) -> bytes:
    try:
        key = encryption["key"]["k"]
        digest = encryption["hashes"]["sha256"]
        iv = encryption["iv"]
        return bytes(decrypt_attachment(data, key, digest, iv))
    except (KeyError, TypeError, ValueError) as exc:
        raise MatrixRequestError("decrypt media", None, f"the attachment cannot be decrypted: {exc}") from None
