"""scipy.special's ufuncs (``stdtr``, ``stdtrit``, ``ndtr``, ``ndtri``: the t and normal
distributions scipy.stats computes with) without importing the ``scipy.special`` package,
whose ``__init__`` wraps every function for array-API backends and so imports
array_api_compat, numpy.testing and numpy.f2py: 0.35 s of CPU that a command computing a
few t quantiles spends twice over. The functions are the very ufunc objects
``scipy.special`` exports (with SCIPY_ARRAY_API unset, its names are bound to them), so every
value is the same to the bit.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from types import ModuleType

PACKAGE = "scipy.special"


def _load() -> ModuleType:
    """``scipy.special._ufuncs``, imported under a bare stand-in for its package that is
    removed again, so that a later ``import scipy.special`` runs the package as usual (and
    finds this extension module already loaded); the package itself where it is loaded
    already or where the stand-in does not suffice."""
    if PACKAGE in sys.modules:
        return sys.modules[PACKAGE]
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or spec.submodule_search_locations is None:
        return importlib.import_module(PACKAGE)
    stand_in = ModuleType(PACKAGE)
    stand_in.__path__ = list(spec.submodule_search_locations)
    stand_in.__spec__ = spec
    sys.modules[PACKAGE] = stand_in
    try:
        return importlib.import_module(f"{PACKAGE}._ufuncs")
    except ImportError:
        pass
    finally:
        if sys.modules.get(PACKAGE) is stand_in:
            del sys.modules[PACKAGE]
    return importlib.import_module(PACKAGE)


_ufuncs = _load()

#: Student's t distribution function: stdtr(df, t) = P(T <= t)
stdtr = _ufuncs.stdtr
#: its inverse in t: stdtrit(df, p) is the p quantile
stdtrit = _ufuncs.stdtrit
#: the standard normal distribution function
ndtr = _ufuncs.ndtr
#: its inverse: ndtri(p) is the p quantile
ndtri = _ufuncs.ndtri
