"""Compare a kernel's outputs with the expected ones, per output and per dtype (the judge's).

Floating outputs pass when ``|out - ref| <= atol + rtol*|ref|`` against the float64 reference,
with the tolerance of the output's own dtype (``tolerances`` in target.yaml, keyed by dtype name)
or else the config's; integer and bool outputs must be equal, unless target.yaml gives a
tolerance for their dtype. The comparison runs in chunks, so a 6 GB output does not need three
more float64 copies of itself.
"""

from __future__ import annotations

import torch

from kopt.measure.reference import FLOAT32_REFERENCE_RTOL, OutputSpec, dtype_name

_isclose = torch.isclose  # the judge's own: the kernel runs in another process (kopt.inside)
_isnan = torch.isnan
_isinf = torch.isinf
_eq = torch.eq
EXACT = {"atol": 0.0, "rtol": 0.0}
CHUNK = 1 << 25  # elements per comparison step (256 MiB of float64)


def tolerance_for(spec: OutputSpec, tolerances: dict, config_tol: dict, widened: bool) -> dict:
    """The tolerance of one output: its dtype's, else the config's (floating) or exact (integer, bool)."""
    floating = getattr(torch, spec.dtype).is_floating_point
    tol = dict(tolerances.get(spec.dtype) or (config_tol if floating else EXACT))
    if widened and floating:
        tol["rtol"] = tol["rtol"] + FLOAT32_REFERENCE_RTOL
    return tol


def _exact(out: torch.Tensor, exp: torch.Tensor, tol: dict) -> bool:
    integral = not (out.is_floating_point() or out.is_complex()) and not (exp.is_floating_point() or exp.is_complex())
    return integral and tol["atol"] == 0 and tol["rtol"] == 0


def compare(out: torch.Tensor, exp: torch.Tensor, spec: OutputSpec, tol: dict, detail: bool = True) -> dict:
    """``ok``, ``reason`` and (with ``detail``) ``max_abs`` / ``max_rel`` of one output."""
    rec = {"ok": False, "max_abs": 0.0, "max_rel": 0.0, "reason": None}
    if tuple(out.shape) != spec.shape:
        rec["reason"] = f"shape {tuple(out.shape)} differs from the reference's {spec.shape}"
        return rec
    if dtype_name(out.dtype) != spec.dtype:
        rec["reason"] = f"dtype {dtype_name(out.dtype)} differs from the reference's {spec.dtype}"
        return rec
    o, e = out.detach().reshape(-1), exp.detach().reshape(-1)
    exact = _exact(out, exp, tol)
    zero = torch.zeros((), dtype=torch.float64, device=o.device)
    n_bad, max_abs, max_rel = zero, zero, zero  # accumulated on the device: one sync at the end
    for a in range(0, o.numel(), CHUNK):
        oc, ec, good = _chunk(o, e, a, tol, exact)
        n_bad = n_bad + (~good).sum()
        if detail:
            d_abs, d_rel = _extremes(oc.to(torch.float64), ec.to(torch.float64), tol["atol"])
            max_abs, max_rel = torch.maximum(max_abs, d_abs), torch.maximum(max_rel, d_rel)
    rec["max_abs"], rec["max_rel"] = float(max_abs), float(max_rel)
    n_bad = int(n_bad)
    if n_bad:  # a second pass says how: NaN, inf, or the first element out of tolerance
        rec["reason"] = _reason(o, e, n_bad, tol, exact)
    rec["ok"] = rec["reason"] is None
    return rec


def _chunk(o: torch.Tensor, e: torch.Tensor, a: int, tol: dict, exact: bool):
    oc = o[a : a + CHUNK]
    ec = e[a : a + CHUNK].to(oc.device)
    if exact:
        return oc, ec, _eq(oc.to(torch.int64), ec.to(torch.int64))
    if oc.is_complex() or ec.is_complex():  # both parts (float64 of a complex is its real part alone)
        oc, ec = (torch.view_as_real(t.to(torch.complex128)) for t in (oc, ec))
        return oc, ec, _isclose(oc, ec, rtol=tol["rtol"], atol=tol["atol"], equal_nan=True).all(-1)
    oc, ec = oc.to(torch.float64), ec.to(torch.float64)
    return oc, ec, _isclose(oc, ec, rtol=tol["rtol"], atol=tol["atol"], equal_nan=True)


def _extremes(o: torch.Tensor, e: torch.Tensor, atol: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Largest absolute and relative error over finite elements (relative where |ref| > atol)."""
    zero = torch.zeros((), dtype=o.dtype, device=o.device)
    if not o.numel():
        return zero, zero
    finite = torch.isfinite(o) & torch.isfinite(e)
    d = (o - e).abs().where(finite, zero)
    rel = (d / e.abs().clamp_min(torch.finfo(torch.float64).tiny)).where(e.abs() > atol, zero)
    return d.max(), rel.max()


def _value(t: torch.Tensor) -> float | complex:
    """One element as a number (a complex one arrives as its two parts)."""
    return float(t) if t.numel() == 1 else complex(*t.tolist())


def _reason(o: torch.Tensor, e: torch.Tensor, n_bad: int, tol: dict, exact: bool) -> str:
    n_nan = n_inf = 0
    first = None
    for a in range(0, o.numel(), CHUNK):
        oc, ec, good = _chunk(o, e, a, tol, exact)
        if not exact:
            n_nan += int((_isnan(oc) & ~_isnan(ec)).sum())
            n_inf += int((_isinf(oc) & ~_isinf(ec)).sum())
        if first is None and not bool(good.all()):
            i = int((~good).nonzero()[0])
            first = (a + i, _value(oc[i]), _value(ec[i]))
    n = o.numel()
    if n_nan:
        return f"{n_nan} of {n} elements are NaN where the reference is not (unwritten or invalid)"
    if n_inf:
        return f"{n_inf} of {n} elements are inf where the reference is finite"
    idx, got, want = first
    what = "differ from the reference (exact dtype)" if exact else f"outside atol={tol['atol']:g}, rtol={tol['rtol']:g}"
    return f"{n_bad} of {n} elements {what} (first at flat index {idx}: got {got:.6g}, expected {want:.6g})"
