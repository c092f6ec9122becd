"""reljudge.stats.special: scipy.special's t and normal ufuncs, bit for bit, without the
package's import cost; and scipy.special itself intact when something imports it later."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import scipy.special

from reljudge.stats import special


def _bits(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, np.float64).view(np.int64)


def test_the_t_quantiles_are_scipys_to_the_bit():
    rng = np.random.default_rng(7)
    df = np.concatenate([np.arange(1, 400, dtype=np.float64), rng.uniform(1, 5000, 4000),
                         rng.uniform(1, 3, 1000)])
    q = np.concatenate([np.full(399, 0.975), rng.uniform(0.5, 1, 4000),
                        rng.choice([0.95, 0.975, 0.995, 0.9], 1000)])
    assert (_bits(special.stdtrit(df, q)) == _bits(scipy.special.stdtrit(df, q))).all()
    t = rng.normal(0, 4, len(df))
    assert (_bits(special.stdtr(df, t)) == _bits(scipy.special.stdtr(df, t))).all()
    p = rng.uniform(0, 1, 5000)
    assert (_bits(special.ndtri(p)) == _bits(scipy.special.ndtri(p))).all()
    assert (_bits(special.ndtr(t)) == _bits(scipy.special.ndtr(t))).all()
    # one level's quantile as estimate_from_moments asks for it: a python float
    assert special.stdtrit(12.5, 0.5 + 0.95 / 2) == scipy.special.stdtrit(12.5, 0.975)


def _fresh(code: str) -> str:
    """What a fresh interpreter prints running code."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout


def test_the_estimates_import_no_scipy_special_package():
    out = _fresh("import sys, reljudge.infer.ppi, reljudge.infer.ratio, reljudge.infer.weighted,"
                 " reljudge.infer.active\n"
                 "print(sorted(m for m in sys.modules if m in ('scipy.special', 'scipy.stats',"
                 " 'scipy._lib._array_api', 'numpy.f2py', 'numpy.testing')))")
    assert out.split() == ["[]"]


def test_scipy_special_imported_afterwards_is_the_whole_package():
    out = _fresh("from reljudge.stats import special as ours\n"
                 "import scipy\n"
                 "from scipy import special\n"
                 "import scipy.special as again\n"
                 "print(special is again is scipy.special, special.stdtrit is ours.stdtrit,"
                 " callable(special.gamma), special.__file__.endswith('__init__.py'))")
    assert out.split() == ["True"] * 4
