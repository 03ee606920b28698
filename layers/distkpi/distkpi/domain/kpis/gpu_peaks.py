"""Dense peak TFLOP/s per GPU model and precision: the denominator of MFU.

Dense means without 2:4 structured sparsity (datasheets print both; the sparse figure is
twice the dense one). Sources, each the vendor's datasheet of the SXM/OAM part unless named:
- H100 SXM5 and H200 SXM: NVIDIA H100 Tensor Core GPU datasheet (2023) and H200 datasheet
  (2024): BF16/FP16 1,979 TFLOPS and FP8 3,958 with sparsity; TF32 989 with sparsity.
- H100 PCIe: the same H100 datasheet, PCIe column: BF16/FP16 1,513 with sparsity.
- A100 (SXM4 and PCIe): NVIDIA A100 datasheet (2021): BF16/FP16 312, TF32 156, FP32 19.5.
- V100 SXM2: NVIDIA V100 datasheet (2020): tensor FP16 125, FP32 15.7 (no BF16).
- L40S: NVIDIA L40S datasheet (2023): BF16/FP16 362.05 (733 with sparsity), FP8 733.
- B200 (HGX B200, per GPU): NVIDIA Blackwell datasheet (2024): BF16/FP16 2.25 PFLOPS dense,
  FP8 4.5.
- L4: NVIDIA L4 datasheet (2023): BF16/FP16 242 with sparsity, FP8 485 with sparsity.
- A10G: AWS's A10G is NVIDIA's A10 part: A10 datasheet (2021), BF16/FP16 125 dense.
- T4: NVIDIA T4 datasheet (2019): mixed-precision FP16 65 (no BF16).
"""

from __future__ import annotations

# a GPU model's names as nvidia-smi prints them, matched by the first of these keys the name
# contains (so "H100 PCIe" before "H100"), and its dense TFLOP/s per precision
PEAKS: tuple[tuple[str, dict[str, float]], ...] = (
    ("H100 PCIE", {"bf16": 756.5, "fp16": 756.5, "fp8": 1513.0, "tf32": 378.0, "fp32": 51.0}),
    ("H100", {"bf16": 989.4, "fp16": 989.4, "fp8": 1978.9, "tf32": 494.7, "fp32": 66.9}),
    ("H200", {"bf16": 989.4, "fp16": 989.4, "fp8": 1978.9, "tf32": 494.7, "fp32": 66.9}),
    ("B200", {"bf16": 2250.0, "fp16": 2250.0, "fp8": 4500.0, "tf32": 1100.0, "fp32": 75.0}),
    ("A100", {"bf16": 312.0, "fp16": 312.0, "tf32": 156.0, "fp32": 19.5}),
    ("V100", {"fp16": 125.0, "fp32": 15.7}),
    ("L40S", {"bf16": 362.05, "fp16": 362.05, "fp8": 733.0, "tf32": 183.0, "fp32": 91.6}),
    ("A10G", {"bf16": 125.0, "fp16": 125.0, "tf32": 62.5, "fp32": 31.2}),
    ("L4", {"bf16": 121.0, "fp16": 121.0, "fp8": 242.5, "tf32": 60.0, "fp32": 30.3}),
    ("T4", {"fp16": 65.0, "fp32": 8.1}),
)


def gpu_model(hardware: str | None) -> str | None:
    """The GPU part of a config's hardware (``<instance type>/<GPU model>``)."""
    if not hardware or "/" not in hardware:
        return None
    return hardware.split("/", 1)[1] or None


def peak_tflops(model: str, dtype: str) -> float | None:
    """The dense peak of ``model`` (as nvidia-smi names it) at ``dtype``; None: not known."""
    upper = model.upper()
    for key, peaks in PEAKS:
        if key in upper:
            return peaks.get(dtype)
    return None
