"""This installation's signing key, and the keyed MAC that marks a file as written here.

A saved executable holds LLVM IR that becomes machine code in this process, and no check
over LLVM IR can prove that code safe (pointer arithmetic on any allowed symbol reaches the
rest of the process).  So an executable file is signed when it is saved: an HMAC-SHA256 of
its contents under a random 32-byte key that lives in the user's config directory.  Loading
verifies the MAC before reading anything else, so only files this installation (this user)
wrote load without ``trust=True``.  See ``docs/threat_model.md``.

The key file is ``<config dir>/signing.key``, created on first use with mode 0600 in a
directory of mode 0700; the config directory is ``$MINITVM_CONFIG_DIR`` if set, else
``$XDG_CONFIG_HOME/minitvm``, else ``~/.config/minitvm``.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
from pathlib import Path

__all__ = ["config_dir", "key_path", "signing_key", "mac", "MAC_SIZE", "KEY_SIZE"]

KEY_SIZE = 32
MAC_SIZE = hashlib.sha256().digest_size  # 32
_KEY_FILE = "signing.key"


def config_dir() -> Path:
    """Where minitvm keeps per-user files (the signing key)."""
    explicit = os.environ.get("MINITVM_CONFIG_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CONFIG_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".config"
    return base / "minitvm"


def key_path() -> Path:
    return config_dir() / _KEY_FILE


def signing_key() -> bytes:
    """This installation's key: read from :func:`key_path`, created there on first use."""
    path = key_path()
    if not path.exists():
        _create_key(path)
    return _read_key(path)


def mac(key: bytes, *parts: bytes) -> bytes:
    """HMAC-SHA256 of the concatenated ``parts`` under ``key``."""
    h = hmac.new(key, digestmod=hashlib.sha256)
    for p in parts:
        h.update(p)
    return h.digest()


def _create_key(path: Path) -> None:
    """Write a fresh random key, atomically: two processes starting at once end with one key."""
    tmp = path.with_name(f".{_KEY_FILE}.{os.getpid()}.{secrets.token_hex(4)}")
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as err:
        raise type(err)(f"cannot create minitvm's signing key in {path.parent} ({err.strerror or err}); "
                        "set MINITVM_CONFIG_DIR to a private directory you can write") from err
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(secrets.token_bytes(KEY_SIZE))
        try:
            os.link(tmp, path)  # fails if another process made the key first: keep theirs
        except FileExistsError:
            pass
    finally:
        tmp.unlink(missing_ok=True)


def _read_key(path: Path) -> bytes:
    mode = path.stat().st_mode
    if os.name == "posix" and mode & (stat.S_IRWXG | stat.S_IRWXO):
        # another user who can read the key can sign files that this one then runs
        raise PermissionError(f"minitvm's signing key {path} is accessible to other users "
                              f"(mode {stat.S_IMODE(mode):o}); make it private: chmod 600 {path}")
    key = path.read_bytes()
    if len(key) != KEY_SIZE:
        raise ValueError(f"minitvm's signing key {path} holds {len(key)} bytes, not {KEY_SIZE}; delete it "
                         "to make a new one (files signed with the old key then need trust=True)")
    return key
