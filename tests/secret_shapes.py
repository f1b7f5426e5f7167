"""Seeded secrets (issue 12): each a line a tool, a test or an agent might print, and the secret
part that must not appear in any byte greenloop writes. Shared by the tests and bench/soak.py.

The values are fake, built from parts at import time so no scanner mistakes this file for a leak.
"""

from __future__ import annotations

_B64 = "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7onLRnrq0"


def _j(*parts: str) -> str:
    return "".join(parts)


JWT = _j(
    "eyJhbGciOiJIUzI1NiJ9",
    ".",
    "eyJzdWIiOiIxMjM0NTY3ODkwIn0",
    ".",
    "dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk",
)

# (line as printed, the secret inside it)
SHAPES: tuple[tuple[str, str], ...] = (
    (_j("aws key AK", "IAQWERTYUIOPASDFGH"), _j("AK", "IAQWERTYUIOPASDFGH")),
    (_j("token ASIA", "ZXCVBNMLKJHGFDSA"), _j("ASIA", "ZXCVBNMLKJHGFDSA")),
    (
        _j("gh: ghp_", "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"),
        _j("ghp_", "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"),
    ),
    (
        _j("pat github_pat_", "11ABCDEFG0123456789_abcdefghijKLMNOP"),
        _j("github_pat_", "11ABCDEFG0123456789_abcdefghijKLMNOP"),
    ),
    (
        _j("openai sk-proj-", "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg"),
        _j("sk-proj-", "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg"),
    ),
    (
        _j("anthropic sk-ant-", "api03-Qw3Er4Ty5Ui6Op7As8Df9Gh"),
        _j("sk-ant-", "api03-Qw3Er4Ty5Ui6Op7As8Df9Gh"),
    ),
    (
        _j("slack xoxb-", "1234567890-0987654321-AbCdEfGhIjKl"),
        _j("xoxb-", "1234567890-0987654321-AbCdEfGhIjKl"),
    ),
    (_j("gitlab glpat-", "Ab12Cd34Ef56Gh78Ij90"), _j("glpat-", "Ab12Cd34Ef56Gh78Ij90")),
    (
        _j("google AIza", "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"),
        _j("AIza", "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"),
    ),
    (_j("stripe sk_", "live_51HqLyjWDarjtT1zdp7dc"), _j("sk_", "live_51HqLyjWDarjtT1zdp7dc")),
    (_j("stripe rk_", "live_51HqLyjWDarjtT1zdXyZ"), _j("rk_", "live_51HqLyjWDarjtT1zdXyZ")),
    (
        _j("webhook whsec_", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"),
        _j("whsec_", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"),
    ),
    (
        _j("hf hf_", "AbCdEfGhIjKlMnOpQrStUvWxYz01234567"),
        _j("hf_", "AbCdEfGhIjKlMnOpQrStUvWxYz01234567"),
    ),
    (
        _j("npm npm_", "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"),
        _j("npm_", "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"),
    ),
    (
        _j("sendgrid SG", ".AbCdEfGhIjKlMnOpQr.StUvWxYz0123456789AbCd"),
        _j("SG", ".AbCdEfGhIjKlMnOpQr.StUvWxYz0123456789AbCd"),
    ),
    (_j("oauth ya29", ".A0AfH6SMBxQwErTyUiOpAsDfGh"), _j("ya29", ".A0AfH6SMBxQwErTyUiOpAsDfGh")),
    (_j("jwt ", JWT), JWT),
    (_j("Authorization: Bearer ", "opaque.Tok3n-Value_0987xyz"), "opaque.Tok3n-Value_0987xyz"),
    ("assert password=hunter2-Sup3r == expected", "hunter2-Sup3r"),
    ("passwd: Corr3ct-Horse-Battery", "Corr3ct-Horse-Battery"),
    ('{"api_key": "k-9f8e7d6c5b4a3210"}', "k-9f8e7d6c5b4a3210"),
    ("client_secret=cs_Q1w2E3r4T5y6U7i8", "cs_Q1w2E3r4T5y6U7i8"),
    ("DB_PASSWORD=Tr0ub4dor-and-3", "Tr0ub4dor-and-3"),
    ("SECRET_TOKEN = 'st-a8s7d6f5g4h3j2k1'", "st-a8s7d6f5g4h3j2k1"),
    (_j("DATABASE_URL=postgres://app:", "pgPassw0rd-xyz", "@db:5432/app"), "pgPassw0rd-xyz"),
    (_j("redis: redis://default:", "r3dis-Secr3t-99", "@cache:6379"), "r3dis-Secr3t-99"),
    (_j("amqp://guest:", "rabbit-Pw-4455", "@mq/"), "rabbit-Pw-4455"),
    (
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ),
    ("agent says password: s3cr3t-agent-pw", "s3cr3t-agent-pw"),
    (
        _j("-----BEGIN RSA ", "PRIVATE KEY-----\n", _B64, "\n-----END RSA ", "PRIVATE KEY-----"),
        _B64,
    ),
    (_j("-----BEGIN OPENSSH ", "PRIVATE KEY-----\n", _B64[::-1], "\n(truncated)"), _B64[::-1]),
    (
        _j(
            "-----BEGIN PGP ",
            "PRIVATE KEY BLOCK-----\n\nlQOYBF",
            _B64[5:60],
            "\n-----END PGP ",
            "PRIVATE KEY BLOCK-----",
        ),
        _B64[5:60],
    ),
    (
        _j("shopify shpat_", "0123456789abcdef0123456789abcdef"),
        _j("shpat_", "0123456789abcdef0123456789abcdef"),
    ),
    (
        _j("do dop_v1_", "a" * 8, "0123456789abcdef" * 3),
        _j("dop_v1_", "a" * 8, "0123456789abcdef" * 3),
    ),
    (
        "custom ACME-INTERNAL-7f3a9c2e1d",
        "ACME-INTERNAL-7f3a9c2e1d",
    ),  # only the project's own pattern
)

PROJECT_PATTERN = r"ACME-INTERNAL-[0-9a-f]{10}"
"""The ``redact = [...]`` pattern the seeded project configures (the last shape needs it)."""


def leaks(text: str) -> list[str]:
    """The seeded secrets found in ``text`` (empty: nothing leaked)."""
    return [secret for _, secret in SHAPES if secret in text]
