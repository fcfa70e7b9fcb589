"""scripts/profile_decode.py on the CPU with the tiny Qwen2 shape: it runs end to end and its byte counts are the shape's
exact ones (the floor it reports rests on them)."""
import json, subprocess, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_profile_decode_tiny_cpu(tmp_path):
    r = subprocess.run([sys.executable, str(ROOT / "scripts/profile_decode.py"), str(tmp_path), "--model", "tiny", "--device", "cpu",
                        "--M", "2", "--max-new", "8", "--draws", "1", "--dtype", "float32"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    res = json.loads((tmp_path / "profile_decode.json").read_text())
    # tiny: hidden 64, intermediate 128, 4 heads of 16, 2 kv heads, 2 layers, vocabulary 512, float32
    qkv, o, gate_up_down = (64 + 2 * 2 * 16) * 64, 64 * 64, 3 * 64 * 128
    assert res["layer_weight_bytes"] == 4 * (qkv + o + gate_up_down) == 147_456
    assert res["step_weight_bytes"] == 2 * 147_456 + 4 * 512 * 64
    assert (res["layers"], res["cache_columns"], res["prompt_end"]) == (2, 64 + 8, 64)
    # the floor reads the step's weights once at the memory's measured rate (a copy's bytes read + written a second)
    assert res["floor_ms_per_step"] == round(res["step_weight_bytes"] / (res["copy_gb_per_s"] * 1e9) * 1e3, 3) > 0
    assert list(res["variants"]) == ["off"] and res["variants"]["off"]["ms_per_decode_step"] > 0
    assert res["kernels_busy_ms_per_step"] is None                       # a GPU-only figure
    assert 0 < sum(t["share"] for t in res["profile_top_self"]) <= 1.0001
    assert set(res["piece_us"]) == {"qkv", "o", "gate", "up", "down", "attention_full_cache", "attention_used_columns", "head", "keyed_draw"}


def test_profile_decode_refuses_an_unknown_model(tmp_path):
    r = subprocess.run([sys.executable, str(ROOT / "scripts/profile_decode.py"), str(tmp_path), "--model", "7b", "--device", "cpu"],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode != 0 and "embedded or one of" in r.stderr
