"""Download links on the deployed stack: what signing a CloudFront signed URL costs the API function.

    .venv/bin/python bench/download_links.py

* **The first link of a process** (a cold start's): in a new interpreter that has imported the S3 adapter (as
  the API has by the time a workspace call runs), the first ``CloudFrontLinkSigner.url``: importing
  ``cryptography`` and botocore's ``CloudFrontSigner``, loading the RSA 2048 key's PEM, one signature. The
  secret comes from a stand-in (the one ``GetSecretValue`` of a cold start, a network round trip in the
  region, is not in the figure). Median of 7 processes.
* **Each link after it**: ``url`` for one key, median and p99 over 2,000 links, then a listing's worth (1,000
  links, the most one page of ``files()`` carries), timed whole.
* **For comparison**: an S3 presigned GET (SigV4, ``generate_presigned_url``) over 2,000 links, what download
  links were before, and still are without the distribution.

Prints a table and writes ``bench/results/download_links.json``. Nothing reaches the network.
"""

from __future__ import annotations

import json
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "layers" / "core" / "python"))

KEY = "w/0123456789abcdef/0123456789abcdef/0123456789abcdef/0123456789abcdef/f/reports/q3 final.csv"
# a new process: the S3 adapter imported (as the API has it by a workspace call), then the first link, timed
FIRST_LINK = f"""
import sys, time
import agentmem.adapters.aws.s3
from agentmem.adapters.aws.cloudfront_links import CloudFrontLinkSigner
pem = sys.stdin.read()
signer = CloudFrontLinkSigner("d111111abcdef8.cloudfront.net", "K2JCJMDEHXQW5F", lambda: pem)
started = time.perf_counter()
signer.url({KEY!r}, expires_in_s=3600, filename="q3 final.csv", content_type="text/csv")
print((time.perf_counter() - started) * 1000)
"""


def _pem() -> str:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode("ascii")


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def main() -> int:
    import boto3
    from agentmem.adapters.aws.cloudfront_links import CloudFrontLinkSigner

    pem = _pem()
    env = {"PYTHONPATH": str(ROOT / "layers" / "core" / "python")}
    first = []
    for _ in range(7):
        answer = subprocess.run([sys.executable, "-c", FIRST_LINK], input=pem, capture_output=True, text=True,
                                check=True, env=env)
        first.append(float(answer.stdout.strip()))

    signer = CloudFrontLinkSigner("d111111abcdef8.cloudfront.net", "K2JCJMDEHXQW5F", lambda: pem)
    signer.url(KEY, expires_in_s=60)
    each = []
    for n in range(2000):
        started = time.perf_counter()
        signer.url(KEY, expires_in_s=60 + n, filename="q3 final.csv", content_type="text/csv")
        each.append((time.perf_counter() - started) * 1000)
    started = time.perf_counter()
    for n in range(1000):
        signer.url(f"{KEY}-{n}", expires_in_s=3600, filename=f"file-{n}.csv", content_type="text/csv")
    page_ms = (time.perf_counter() - started) * 1000

    session = boto3.Session(aws_access_key_id="testing", aws_secret_access_key="testing",
                            aws_session_token="token", region_name="eu-west-1")
    s3 = session.client("s3")
    s3.generate_presigned_url("get_object", Params={"Bucket": "b", "Key": KEY}, ExpiresIn=60)
    presigned = []
    for n in range(2000):
        started = time.perf_counter()
        s3.generate_presigned_url("get_object", Params={"Bucket": "b", "Key": KEY, "ResponseContentType": "text/csv"},
                                  ExpiresIn=60 + n)
        presigned.append((time.perf_counter() - started) * 1000)

    rows = [
        ("first link of a process (import cryptography, load the key, sign)", statistics.median(first), max(first)),
        ("each CloudFront link after it", statistics.median(each), _percentile(each, 0.99)),
        ("1,000 CloudFront links (a full listing page), whole", page_ms, page_ms),
        ("each S3 presigned GET (SigV4), for comparison", statistics.median(presigned),
         _percentile(presigned, 0.99)),
    ]
    print(f"{'measure':<70} {'median ms':>10} {'p99/max ms':>11}")
    for name, median, high in rows:
        print(f"{name:<70} {median:>10.3f} {high:>11.3f}")
    results = {
        "benchmark": "download_links", "python": platform.python_version(), "machine": platform.machine(),
        "rows": [{"measure": name, "median_ms": round(m, 4), "high_ms": round(h, 4)} for name, m, h in rows],
    }
    out = ROOT / "bench" / "results" / "download_links.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
