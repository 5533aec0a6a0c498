"""The recovery key's written form (Matrix's key representation) and where a daemon finds its key."""

from __future__ import annotations

import stat

import pytest

from mindroom.matrix.crypto.recovery_key import (
    RecoveryKeyError,
    RecoveryKeys,
    decode_recovery_key,
    encode_recovery_key,
    take_unshown_recovery_key,
)

_ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def _plain_base58_decode(text: str) -> bytes:
    """A second reading of base58, digit by digit over a byte array (no big integers)."""
    out = [0]
    for char in text:
        carry = _ALPHABET.index(char)
        for i in range(len(out) - 1, -1, -1):
            carry += out[i] * 58
            out[i] = carry & 0xFF
            carry >>= 8
        while carry:
            out.insert(0, carry & 0xFF)
            carry >>= 8
    return bytes(out)


def test_recovery_key_written_form_has_the_prefix_parity_and_groups_of_four():
    key = bytes(range(32))

    text = encode_recovery_key(key)

    groups = text.split(" ")
    assert all(len(group) == 4 for group in groups[:-1]) and 0 < len(groups[-1]) <= 4
    raw = _plain_base58_decode(text.replace(" ", ""))
    assert raw[:2] == b"\x8b\x01" and raw[2:34] == key
    parity = 0
    for byte in raw[:34]:
        parity ^= byte
    assert raw[34] == parity
    assert text.startswith("Es")  # every key with this prefix reads "Es..." (as Element's do)


def test_recovery_key_reads_back_ignoring_whitespace():
    key = bytes(range(100, 132))
    text = encode_recovery_key(key)

    assert decode_recovery_key(text) == key
    assert decode_recovery_key("  " + text.replace(" ", "\n") + " ") == key


@pytest.mark.parametrize(
    ("text", "problem"),
    [("EsT0 abc", "not a base58 character"), ("EsTc", "decodes to"), ("", "decodes to")],
)
def test_recovery_key_malformed_text_is_refused(text: str, problem: str):
    with pytest.raises(RecoveryKeyError, match=problem):
        decode_recovery_key(text)


def test_recovery_key_a_mistyped_character_is_refused():
    text = encode_recovery_key(bytes(range(32)))
    refused = 0
    for position in range(5, 40, 3):
        if text[position] == " ":
            continue
        replacement = "2" if text[position] != "2" else "3"
        try:
            decode_recovery_key(text[:position] + replacement + text[position + 1 :])
        except RecoveryKeyError:
            refused += 1
    assert refused >= 10


def test_recovery_keys_made_once_private_shown_once(tmp_path):
    keys = RecoveryKeys(tmp_path)
    assert keys.load() is None

    made = keys.load_or_create()
    again = RecoveryKeys(tmp_path).load_or_create()

    assert again.key == made.key
    assert stat.S_IMODE(keys.stored_path.stat().st_mode) == 0o600
    assert made.text not in repr(made)
    shown = take_unshown_recovery_key(tmp_path)
    assert shown == (made.text, keys.stored_path)
    assert take_unshown_recovery_key(tmp_path) is None


def test_recovery_keys_the_environment_wins_over_the_stored_file(tmp_path):
    stored = RecoveryKeys(tmp_path).load_or_create()
    given = encode_recovery_key(bytes(32))
    key_file = tmp_path / "given-key"
    key_file.write_text(encode_recovery_key(bytes([7]) * 32))

    from_env = RecoveryKeys.from_environment({"MINDROOM_RECOVERY_KEY": given}, tmp_path).load()
    from_file = RecoveryKeys.from_environment({"MINDROOM_RECOVERY_KEY_FILE": str(key_file)}, tmp_path).load()
    default = RecoveryKeys.from_environment({}, tmp_path).load()

    assert from_env is not None and from_env.key == bytes(32) and from_env.source == "MINDROOM_RECOVERY_KEY"
    assert from_file is not None and from_file.key == bytes([7]) * 32 and from_file.source == str(key_file)
    assert default is not None and default.key == stored.key


def test_recovery_keys_a_bad_given_key_names_its_source(tmp_path):
    with pytest.raises(RecoveryKeyError, match="MINDROOM_RECOVERY_KEY is not one"):
        RecoveryKeys.from_environment({"MINDROOM_RECOVERY_KEY": "nonsense"}, tmp_path).load()
    with pytest.raises(RecoveryKeyError, match="does not exist"):
        RecoveryKeys.from_environment({"MINDROOM_RECOVERY_KEY_FILE": str(tmp_path / "none")}, tmp_path).load()
