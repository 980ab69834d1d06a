"""Helpers shared by the retrieval tests: a counting fake encoder, a hand-made PDF writer, corpus texts.

A uniquely named module (not conftest) so that `from retrieval_support import ...` cannot pick up another
folder's conftest.
"""

from __future__ import annotations

import json
from pathlib import Path

from factlab.retrieval.encoders import HashingEncoder


class CountingEncoder(HashingEncoder):
    """The deterministic hashing encoder, recording every text it was asked to encode."""

    def __init__(self, dim: int = 128):
        super().__init__(dim)
        self.texts: list[str] = []
        self.calls = 0

    def encode(self, texts):
        self.calls += 1
        self.texts.extend(texts)
        return super().encode(texts)


def make_pdf(path: Path, pages: list[list[str]], title: str = "") -> None:
    """Write a minimal valid PDF by hand: one Helvetica text line per string, one PDF page per list."""

    def escape(text: str) -> str:
        return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")

    objects = [b"<< /Type /Catalog /Pages 2 0 R >>"]
    kids = " ".join(f"{4 + 2 * i} 0 R" for i in range(len(pages)))
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>".encode())
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    for i, lines in enumerate(pages):
        shown = " T* ".join(f"({escape(line)}) Tj" for line in lines)
        stream = f"BT /F1 11 Tf 14 TL 72 720 Td {shown} ET".encode("latin-1")
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> "
            f"/Contents {5 + 2 * i} 0 R >>".encode()
        )
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    info_ref = ""
    if title:
        objects.append(f"<< /Title ({escape(title)}) >>".encode("latin-1"))
        info_ref = f" /Info {len(objects)} 0 R"
    out = b"%PDF-1.4\n"
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R{info_ref} >>\nstartxref\n{xref}\n%%EOF\n".encode()
    path.write_bytes(out)


def write_records(path: Path, records: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records), encoding="utf-8")


# A tier-1 page, a tier-2 page on another topic, a tier-3 copy of the tier-1 text, a Chinese page.
FLEMING = (
    "Penicillin was discovered by Alexander Fleming in 1928 at St Mary's Hospital in London. "
    "He noticed that a mould killed the bacteria around it."
)
RATES = "The central bank raised its benchmark interest rate by 25 basis points in March 2023 to fight inflation."
YANGTZE = "长江是中国最长的河流，全长约6300公里。长江流经青海、西藏、四川等省份，最终注入东海。"
