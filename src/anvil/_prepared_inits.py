"""Prepared ``__init__`` templates of :mod:`anvil._dataclass` (by ``scripts/prepare_inits.py``; do not edit).

Each function is a text ``anvil._dataclass`` writes for an ``__init__`` (fields as positions), stored with
that text: importing this module loads their bytecode from its cache instead of compiling the texts.
"""

# ruff: noqa
# fmt: off
# mypy: ignore-errors

from types import FunctionType

TEMPLATES: list[tuple[str, FunctionType]] = []

def __create_fn__(_t0, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type):
 def __init__(self,*,_f0:_t0)->_return_type:
  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)
 return __init__
TEMPLATES.append(("def __create_fn__(_t0, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type):\n def __init__(self,*,_f0:_t0)->_return_type:\n  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)\n return __init__", __create_fn__))
def __create_fn__(_t0, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d0):
 def __init__(self,*,_f0:_t0=_d0)->_return_type:
  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)
 return __init__
TEMPLATES.append(("def __create_fn__(_t0, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d0):\n def __init__(self,*,_f0:_t0=_d0)->_return_type:\n  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)\n return __init__", __create_fn__))
def __create_fn__(_t0, _t1, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type):
 def __init__(self,*,_f0:_t0,_f1:_t1)->_return_type:
  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)
  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)
 return __init__
TEMPLATES.append(("def __create_fn__(_t0, _t1, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type):\n def __init__(self,*,_f0:_t0,_f1:_t1)->_return_type:\n  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)\n  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)\n return __init__", __create_fn__))
def __create_fn__(_t0, _t1, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type):
 def __init__(self,_f0:_t0,_f1:_t1)->_return_type:
  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)
  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)
 return __init__
TEMPLATES.append(("def __create_fn__(_t0, _t1, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type):\n def __init__(self,_f0:_t0,_f1:_t1)->_return_type:\n  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)\n  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)\n return __init__", __create_fn__))
def __create_fn__(_t0, _t1, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d0, _d1):
 def __init__(self,*,_f0:_t0=_d0,_f1:_t1=_d1)->_return_type:
  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)
  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)
 return __init__
TEMPLATES.append(("def __create_fn__(_t0, _t1, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d0, _d1):\n def __init__(self,*,_f0:_t0=_d0,_f1:_t1=_d1)->_return_type:\n  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)\n  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)\n return __init__", __create_fn__))
def __create_fn__(_t0, _t1, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d0, _d1):
 def __init__(self,_f0:_t0=_d0,_f1:_t1=_d1)->_return_type:
  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)
  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)
 return __init__
TEMPLATES.append(("def __create_fn__(_t0, _t1, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d0, _d1):\n def __init__(self,_f0:_t0=_d0,_f1:_t1=_d1)->_return_type:\n  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)\n  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)\n return __init__", __create_fn__))
def __create_fn__(_t0, _t1, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d1):
 def __init__(self,*,_f0:_t0,_f1:_t1=_d1)->_return_type:
  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)
  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)
 return __init__
TEMPLATES.append(("def __create_fn__(_t0, _t1, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d1):\n def __init__(self,*,_f0:_t0,_f1:_t1=_d1)->_return_type:\n  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)\n  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)\n return __init__", __create_fn__))
def __create_fn__(_t0, _t1, _t2, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type):
 def __init__(self,_f0:_t0,_f1:_t1,_f2:_t2)->_return_type:
  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)
  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)
  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)
 return __init__
TEMPLATES.append(("def __create_fn__(_t0, _t1, _t2, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type):\n def __init__(self,_f0:_t0,_f1:_t1,_f2:_t2)->_return_type:\n  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)\n  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)\n  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)\n return __init__", __create_fn__))
def __create_fn__(_t0, _t1, _t2, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d0, _d1, _d2):
 def __init__(self,*,_f0:_t0=_d0,_f1:_t1=_d1,_f2:_t2=_d2)->_return_type:
  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)
  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)
  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)
 return __init__
TEMPLATES.append(("def __create_fn__(_t0, _t1, _t2, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d0, _d1, _d2):\n def __init__(self,*,_f0:_t0=_d0,_f1:_t1=_d1,_f2:_t2=_d2)->_return_type:\n  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)\n  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)\n  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)\n return __init__", __create_fn__))
def __create_fn__(_t0, _t1, _t2, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d0, _d1, _d2):
 def __init__(self,_f0:_t0=_d0,_f1:_t1=_d1,_f2:_t2=_d2)->_return_type:
  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)
  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)
  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)
 return __init__
TEMPLATES.append(("def __create_fn__(_t0, _t1, _t2, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d0, _d1, _d2):\n def __init__(self,_f0:_t0=_d0,_f1:_t1=_d1,_f2:_t2=_d2)->_return_type:\n  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)\n  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)\n  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)\n return __init__", __create_fn__))
def __create_fn__(_t0, _t1, _t2, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d1, _d2):
 def __init__(self,*,_f0:_t0,_f1:_t1=_d1,_f2:_t2=_d2)->_return_type:
  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)
  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)
  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)
 return __init__
TEMPLATES.append(("def __create_fn__(_t0, _t1, _t2, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d1, _d2):\n def __init__(self,*,_f0:_t0,_f1:_t1=_d1,_f2:_t2=_d2)->_return_type:\n  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)\n  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)\n  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)\n return __init__", __create_fn__))
def __create_fn__(_t0, _t1, _t2, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d1, _d2):
 def __init__(self,_f0:_t0,_f1:_t1=_HAS_DEFAULT_FACTORY,_f2:_t2=_HAS_DEFAULT_FACTORY)->_return_type:
  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)
  __dataclass_builtins_object__.__setattr__(self,'_f1',_d1() if _f1 is _HAS_DEFAULT_FACTORY else _f1)
  __dataclass_builtins_object__.__setattr__(self,'_f2',_d2() if _f2 is _HAS_DEFAULT_FACTORY else _f2)
 return __init__
TEMPLATES.append(("def __create_fn__(_t0, _t1, _t2, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d1, _d2):\n def __init__(self,_f0:_t0,_f1:_t1=_HAS_DEFAULT_FACTORY,_f2:_t2=_HAS_DEFAULT_FACTORY)->_return_type:\n  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)\n  __dataclass_builtins_object__.__setattr__(self,'_f1',_d1() if _f1 is _HAS_DEFAULT_FACTORY else _f1)\n  __dataclass_builtins_object__.__setattr__(self,'_f2',_d2() if _f2 is _HAS_DEFAULT_FACTORY else _f2)\n return __init__", __create_fn__))
def __create_fn__(_t0, _t1, _t2, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d1, _d2):
 def __init__(self,_f0:_t0,_f1:_t1=_d1,_f2:_t2=_d2)->_return_type:
  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)
  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)
  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)
 return __init__
TEMPLATES.append(("def __create_fn__(_t0, _t1, _t2, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d1, _d2):\n def __init__(self,_f0:_t0,_f1:_t1=_d1,_f2:_t2=_d2)->_return_type:\n  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)\n  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)\n  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)\n return __init__", __create_fn__))
def __create_fn__(_t0, _t1, _t2, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d2):
 def __init__(self,_f0:_t0,_f1:_t1,_f2:_t2=_d2)->_return_type:
  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)
  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)
  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)
 return __init__
TEMPLATES.append(("def __create_fn__(_t0, _t1, _t2, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d2):\n def __init__(self,_f0:_t0,_f1:_t1,_f2:_t2=_d2)->_return_type:\n  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)\n  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)\n  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)\n return __init__", __create_fn__))
def __create_fn__(_t0, _t1, _t2, _t3, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type):
 def __init__(self,_f0:_t0,_f1:_t1,_f2:_t2,_f3:_t3)->_return_type:
  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)
  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)
  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)
  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)
 return __init__
TEMPLATES.append(("def __create_fn__(_t0, _t1, _t2, _t3, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type):\n def __init__(self,_f0:_t0,_f1:_t1,_f2:_t2,_f3:_t3)->_return_type:\n  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)\n  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)\n  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)\n  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)\n return __init__", __create_fn__))
def __create_fn__(_t0, _t1, _t2, _t3, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d0, _d1, _d2, _d3):
 def __init__(self,*,_f0:_t0=_d0,_f1:_t1=_d1,_f2:_t2=_d2,_f3:_t3=_d3)->_return_type:
  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)
  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)
  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)
  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)
 return __init__
TEMPLATES.append(("def __create_fn__(_t0, _t1, _t2, _t3, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d0, _d1, _d2, _d3):\n def __init__(self,*,_f0:_t0=_d0,_f1:_t1=_d1,_f2:_t2=_d2,_f3:_t3=_d3)->_return_type:\n  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)\n  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)\n  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)\n  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)\n return __init__", __create_fn__))
def __create_fn__(_t0, _t1, _t2, _t3, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d1, _d2, _d3):
 def __init__(self,*,_f0:_t0,_f1:_t1=_d1,_f2:_t2=_d2,_f3:_t3=_HAS_DEFAULT_FACTORY)->_return_type:
  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)
  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)
  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)
  __dataclass_builtins_object__.__setattr__(self,'_f3',_d3() if _f3 is _HAS_DEFAULT_FACTORY else _f3)
 return __init__
TEMPLATES.append(("def __create_fn__(_t0, _t1, _t2, _t3, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d1, _d2, _d3):\n def __init__(self,*,_f0:_t0,_f1:_t1=_d1,_f2:_t2=_d2,_f3:_t3=_HAS_DEFAULT_FACTORY)->_return_type:\n  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)\n  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)\n  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)\n  __dataclass_builtins_object__.__setattr__(self,'_f3',_d3() if _f3 is _HAS_DEFAULT_FACTORY else _f3)\n return __init__", __create_fn__))
def __create_fn__(_t0, _t1, _t2, _t3, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d1, _d2, _d3):
 def __init__(self,*,_f0:_t0,_f1:_t1=_d1,_f2:_t2=_d2,_f3:_t3=_d3)->_return_type:
  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)
  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)
  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)
  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)
 return __init__
TEMPLATES.append(("def __create_fn__(_t0, _t1, _t2, _t3, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d1, _d2, _d3):\n def __init__(self,*,_f0:_t0,_f1:_t1=_d1,_f2:_t2=_d2,_f3:_t3=_d3)->_return_type:\n  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)\n  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)\n  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)\n  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)\n return __init__", __create_fn__))
def __create_fn__(_t0, _t1, _t2, _t3, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d3):
 def __init__(self,*,_f0:_t0,_f1:_t1,_f2:_t2,_f3:_t3=_d3)->_return_type:
  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)
  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)
  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)
  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)
 return __init__
TEMPLATES.append(("def __create_fn__(_t0, _t1, _t2, _t3, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d3):\n def __init__(self,*,_f0:_t0,_f1:_t1,_f2:_t2,_f3:_t3=_d3)->_return_type:\n  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)\n  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)\n  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)\n  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)\n return __init__", __create_fn__))
def __create_fn__(_t0, _t1, _t2, _t3, _t4, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type):
 def __init__(self,*,_f0:_t0,_f1:_t1,_f2:_t2,_f3:_t3,_f4:_t4)->_return_type:
  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)
  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)
  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)
  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)
  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)
 return __init__
TEMPLATES.append(("def __create_fn__(_t0, _t1, _t2, _t3, _t4, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type):\n def __init__(self,*,_f0:_t0,_f1:_t1,_f2:_t2,_f3:_t3,_f4:_t4)->_return_type:\n  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)\n  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)\n  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)\n  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)\n  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)\n return __init__", __create_fn__))
def __create_fn__(_t0, _t1, _t2, _t3, _t4, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type):
 def __init__(self,_f0:_t0,_f1:_t1,_f2:_t2,_f3:_t3,_f4:_t4)->_return_type:
  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)
  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)
  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)
  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)
  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)
 return __init__
TEMPLATES.append(("def __create_fn__(_t0, _t1, _t2, _t3, _t4, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type):\n def __init__(self,_f0:_t0,_f1:_t1,_f2:_t2,_f3:_t3,_f4:_t4)->_return_type:\n  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)\n  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)\n  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)\n  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)\n  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)\n return __init__", __create_fn__))
def __create_fn__(_t0, _t1, _t2, _t3, _t4, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d0, _d1, _d2, _d3, _d4):
 def __init__(self,*,_f0:_t0=_d0,_f1:_t1=_d1,_f2:_t2=_HAS_DEFAULT_FACTORY,_f3:_t3=_d3,_f4:_t4=_d4)->_return_type:
  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)
  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)
  __dataclass_builtins_object__.__setattr__(self,'_f2',_d2() if _f2 is _HAS_DEFAULT_FACTORY else _f2)
  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)
  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)
 return __init__
TEMPLATES.append(("def __create_fn__(_t0, _t1, _t2, _t3, _t4, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d0, _d1, _d2, _d3, _d4):\n def __init__(self,*,_f0:_t0=_d0,_f1:_t1=_d1,_f2:_t2=_HAS_DEFAULT_FACTORY,_f3:_t3=_d3,_f4:_t4=_d4)->_return_type:\n  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)\n  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)\n  __dataclass_builtins_object__.__setattr__(self,'_f2',_d2() if _f2 is _HAS_DEFAULT_FACTORY else _f2)\n  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)\n  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)\n return __init__", __create_fn__))
def __create_fn__(_t0, _t1, _t2, _t3, _t4, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d2, _d3, _d4):
 def __init__(self,*,_f0:_t0,_f1:_t1,_f2:_t2=_d2,_f3:_t3=_d3,_f4:_t4=_d4)->_return_type:
  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)
  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)
  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)
  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)
  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)
 return __init__
TEMPLATES.append(("def __create_fn__(_t0, _t1, _t2, _t3, _t4, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d2, _d3, _d4):\n def __init__(self,*,_f0:_t0,_f1:_t1,_f2:_t2=_d2,_f3:_t3=_d3,_f4:_t4=_d4)->_return_type:\n  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)\n  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)\n  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)\n  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)\n  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)\n return __init__", __create_fn__))
def __create_fn__(_t0, _t1, _t2, _t3, _t4, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d4):
 def __init__(self,_f0:_t0,_f1:_t1,_f2:_t2,_f3:_t3,_f4:_t4=_d4)->_return_type:
  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)
  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)
  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)
  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)
  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)
 return __init__
TEMPLATES.append(("def __create_fn__(_t0, _t1, _t2, _t3, _t4, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d4):\n def __init__(self,_f0:_t0,_f1:_t1,_f2:_t2,_f3:_t3,_f4:_t4=_d4)->_return_type:\n  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)\n  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)\n  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)\n  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)\n  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)\n return __init__", __create_fn__))
def __create_fn__(_t0, _t1, _t2, _t3, _t4, _t5, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d0, _d1, _d2, _d3, _d4, _d5):
 def __init__(self,*,_f0:_t0=_d0,_f1:_t1=_d1,_f2:_t2=_d2,_f3:_t3=_d3,_f4:_t4=_d4,_f5:_t5=_d5)->_return_type:
  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)
  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)
  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)
  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)
  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)
  __dataclass_builtins_object__.__setattr__(self,'_f5',_f5)
 return __init__
TEMPLATES.append(("def __create_fn__(_t0, _t1, _t2, _t3, _t4, _t5, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d0, _d1, _d2, _d3, _d4, _d5):\n def __init__(self,*,_f0:_t0=_d0,_f1:_t1=_d1,_f2:_t2=_d2,_f3:_t3=_d3,_f4:_t4=_d4,_f5:_t5=_d5)->_return_type:\n  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)\n  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)\n  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)\n  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)\n  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)\n  __dataclass_builtins_object__.__setattr__(self,'_f5',_f5)\n return __init__", __create_fn__))
def __create_fn__(_t0, _t1, _t2, _t3, _t4, _t5, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d1, _d2, _d3, _d4, _d5):
 def __init__(self,*,_f0:_t0,_f1:_t1=_d1,_f2:_t2=_d2,_f3:_t3=_d3,_f4:_t4=_HAS_DEFAULT_FACTORY,_f5:_t5=_d5)->_return_type:
  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)
  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)
  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)
  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)
  __dataclass_builtins_object__.__setattr__(self,'_f4',_d4() if _f4 is _HAS_DEFAULT_FACTORY else _f4)
  __dataclass_builtins_object__.__setattr__(self,'_f5',_f5)
 return __init__
TEMPLATES.append(("def __create_fn__(_t0, _t1, _t2, _t3, _t4, _t5, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d1, _d2, _d3, _d4, _d5):\n def __init__(self,*,_f0:_t0,_f1:_t1=_d1,_f2:_t2=_d2,_f3:_t3=_d3,_f4:_t4=_HAS_DEFAULT_FACTORY,_f5:_t5=_d5)->_return_type:\n  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)\n  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)\n  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)\n  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)\n  __dataclass_builtins_object__.__setattr__(self,'_f4',_d4() if _f4 is _HAS_DEFAULT_FACTORY else _f4)\n  __dataclass_builtins_object__.__setattr__(self,'_f5',_f5)\n return __init__", __create_fn__))
def __create_fn__(_t0, _t1, _t2, _t3, _t4, _t5, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d1, _d2, _d3, _d4, _d5):
 def __init__(self,*,_f0:_t0,_f1:_t1=_d1,_f2:_t2=_d2,_f3:_t3=_d3,_f4:_t4=_d4,_f5:_t5=_d5)->_return_type:
  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)
  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)
  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)
  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)
  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)
  __dataclass_builtins_object__.__setattr__(self,'_f5',_f5)
 return __init__
TEMPLATES.append(("def __create_fn__(_t0, _t1, _t2, _t3, _t4, _t5, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d1, _d2, _d3, _d4, _d5):\n def __init__(self,*,_f0:_t0,_f1:_t1=_d1,_f2:_t2=_d2,_f3:_t3=_d3,_f4:_t4=_d4,_f5:_t5=_d5)->_return_type:\n  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)\n  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)\n  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)\n  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)\n  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)\n  __dataclass_builtins_object__.__setattr__(self,'_f5',_f5)\n return __init__", __create_fn__))
def __create_fn__(_t0, _t1, _t2, _t3, _t4, _t5, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d1, _d2, _d3, _d5):
 def __init__(self,*,_f0:_t0,_f1:_t1=_d1,_f2:_t2=_d2,_f3:_t3=_d3,_f4:_t4,_f5:_t5=_d5)->_return_type:
  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)
  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)
  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)
  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)
  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)
  __dataclass_builtins_object__.__setattr__(self,'_f5',_f5)
 return __init__
TEMPLATES.append(("def __create_fn__(_t0, _t1, _t2, _t3, _t4, _t5, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d1, _d2, _d3, _d5):\n def __init__(self,*,_f0:_t0,_f1:_t1=_d1,_f2:_t2=_d2,_f3:_t3=_d3,_f4:_t4,_f5:_t5=_d5)->_return_type:\n  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)\n  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)\n  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)\n  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)\n  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)\n  __dataclass_builtins_object__.__setattr__(self,'_f5',_f5)\n return __init__", __create_fn__))
def __create_fn__(_t0, _t1, _t2, _t3, _t4, _t5, _t6, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d0, _d1, _d2, _d3, _d4, _d5, _d6):
 def __init__(self,*,_f0:_t0=_d0,_f1:_t1=_d1,_f2:_t2=_d2,_f3:_t3=_d3,_f4:_t4=_d4,_f5:_t5=_d5,_f6:_t6=_d6)->_return_type:
  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)
  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)
  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)
  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)
  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)
  __dataclass_builtins_object__.__setattr__(self,'_f5',_f5)
  __dataclass_builtins_object__.__setattr__(self,'_f6',_f6)
  self.__post_init__()
 return __init__
TEMPLATES.append(("def __create_fn__(_t0, _t1, _t2, _t3, _t4, _t5, _t6, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d0, _d1, _d2, _d3, _d4, _d5, _d6):\n def __init__(self,*,_f0:_t0=_d0,_f1:_t1=_d1,_f2:_t2=_d2,_f3:_t3=_d3,_f4:_t4=_d4,_f5:_t5=_d5,_f6:_t6=_d6)->_return_type:\n  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)\n  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)\n  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)\n  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)\n  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)\n  __dataclass_builtins_object__.__setattr__(self,'_f5',_f5)\n  __dataclass_builtins_object__.__setattr__(self,'_f6',_f6)\n  self.__post_init__()\n return __init__", __create_fn__))
def __create_fn__(_t0, _t1, _t2, _t3, _t4, _t5, _t6, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d0, _d1, _d2, _d3, _d4, _d5, _d6):
 def __init__(self,*,_f0:_t0=_d0,_f1:_t1=_d1,_f2:_t2=_d2,_f3:_t3=_d3,_f4:_t4=_d4,_f5:_t5=_d5,_f6:_t6=_d6)->_return_type:
  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)
  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)
  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)
  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)
  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)
  __dataclass_builtins_object__.__setattr__(self,'_f5',_f5)
  __dataclass_builtins_object__.__setattr__(self,'_f6',_f6)
 return __init__
TEMPLATES.append(("def __create_fn__(_t0, _t1, _t2, _t3, _t4, _t5, _t6, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d0, _d1, _d2, _d3, _d4, _d5, _d6):\n def __init__(self,*,_f0:_t0=_d0,_f1:_t1=_d1,_f2:_t2=_d2,_f3:_t3=_d3,_f4:_t4=_d4,_f5:_t5=_d5,_f6:_t6=_d6)->_return_type:\n  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)\n  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)\n  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)\n  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)\n  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)\n  __dataclass_builtins_object__.__setattr__(self,'_f5',_f5)\n  __dataclass_builtins_object__.__setattr__(self,'_f6',_f6)\n return __init__", __create_fn__))
def __create_fn__(_t0, _t1, _t2, _t3, _t4, _t5, _t6, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d1, _d2, _d3, _d4, _d5, _d6):
 def __init__(self,*,_f0:_t0,_f1:_t1=_d1,_f2:_t2=_d2,_f3:_t3=_d3,_f4:_t4=_d4,_f5:_t5=_d5,_f6:_t6=_d6)->_return_type:
  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)
  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)
  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)
  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)
  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)
  __dataclass_builtins_object__.__setattr__(self,'_f5',_f5)
  __dataclass_builtins_object__.__setattr__(self,'_f6',_f6)
 return __init__
TEMPLATES.append(("def __create_fn__(_t0, _t1, _t2, _t3, _t4, _t5, _t6, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d1, _d2, _d3, _d4, _d5, _d6):\n def __init__(self,*,_f0:_t0,_f1:_t1=_d1,_f2:_t2=_d2,_f3:_t3=_d3,_f4:_t4=_d4,_f5:_t5=_d5,_f6:_t6=_d6)->_return_type:\n  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)\n  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)\n  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)\n  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)\n  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)\n  __dataclass_builtins_object__.__setattr__(self,'_f5',_f5)\n  __dataclass_builtins_object__.__setattr__(self,'_f6',_f6)\n return __init__", __create_fn__))
def __create_fn__(_t0, _t1, _t2, _t3, _t4, _t5, _t6, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d3, _d4, _d5, _d6):
 def __init__(self,_f0:_t0,_f1:_t1,_f2:_t2,_f3:_t3=_d3,_f4:_t4=_d4,_f5:_t5=_d5,_f6:_t6=_d6)->_return_type:
  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)
  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)
  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)
  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)
  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)
  __dataclass_builtins_object__.__setattr__(self,'_f5',_f5)
  __dataclass_builtins_object__.__setattr__(self,'_f6',_f6)
 return __init__
TEMPLATES.append(("def __create_fn__(_t0, _t1, _t2, _t3, _t4, _t5, _t6, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d3, _d4, _d5, _d6):\n def __init__(self,_f0:_t0,_f1:_t1,_f2:_t2,_f3:_t3=_d3,_f4:_t4=_d4,_f5:_t5=_d5,_f6:_t6=_d6)->_return_type:\n  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)\n  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)\n  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)\n  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)\n  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)\n  __dataclass_builtins_object__.__setattr__(self,'_f5',_f5)\n  __dataclass_builtins_object__.__setattr__(self,'_f6',_f6)\n return __init__", __create_fn__))
def __create_fn__(_t0, _t1, _t2, _t3, _t4, _t5, _t6, _t7, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d0, _d2, _d3, _d4, _d5, _d6, _d7):
 def __init__(self,*,_f0:_t0=_d0,_f1:_t1,_f2:_t2=_d2,_f3:_t3=_d3,_f4:_t4=_d4,_f5:_t5=_d5,_f6:_t6=_HAS_DEFAULT_FACTORY,_f7:_t7=_d7)->_return_type:
  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)
  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)
  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)
  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)
  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)
  __dataclass_builtins_object__.__setattr__(self,'_f5',_f5)
  __dataclass_builtins_object__.__setattr__(self,'_f6',_d6() if _f6 is _HAS_DEFAULT_FACTORY else _f6)
  __dataclass_builtins_object__.__setattr__(self,'_f7',_f7)
 return __init__
TEMPLATES.append(("def __create_fn__(_t0, _t1, _t2, _t3, _t4, _t5, _t6, _t7, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d0, _d2, _d3, _d4, _d5, _d6, _d7):\n def __init__(self,*,_f0:_t0=_d0,_f1:_t1,_f2:_t2=_d2,_f3:_t3=_d3,_f4:_t4=_d4,_f5:_t5=_d5,_f6:_t6=_HAS_DEFAULT_FACTORY,_f7:_t7=_d7)->_return_type:\n  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)\n  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)\n  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)\n  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)\n  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)\n  __dataclass_builtins_object__.__setattr__(self,'_f5',_f5)\n  __dataclass_builtins_object__.__setattr__(self,'_f6',_d6() if _f6 is _HAS_DEFAULT_FACTORY else _f6)\n  __dataclass_builtins_object__.__setattr__(self,'_f7',_f7)\n return __init__", __create_fn__))
def __create_fn__(_t0, _t1, _t2, _t3, _t4, _t5, _t6, _t7, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d2, _d3, _d4, _d5, _d6, _d7):
 def __init__(self,_f0:_t0,_f1:_t1,_f2:_t2=_d2,_f3:_t3=_d3,_f4:_t4=_d4,_f5:_t5=_d5,_f6:_t6=_d6,_f7:_t7=_d7)->_return_type:
  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)
  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)
  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)
  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)
  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)
  __dataclass_builtins_object__.__setattr__(self,'_f5',_f5)
  __dataclass_builtins_object__.__setattr__(self,'_f6',_f6)
  __dataclass_builtins_object__.__setattr__(self,'_f7',_f7)
 return __init__
TEMPLATES.append(("def __create_fn__(_t0, _t1, _t2, _t3, _t4, _t5, _t6, _t7, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d2, _d3, _d4, _d5, _d6, _d7):\n def __init__(self,_f0:_t0,_f1:_t1,_f2:_t2=_d2,_f3:_t3=_d3,_f4:_t4=_d4,_f5:_t5=_d5,_f6:_t6=_d6,_f7:_t7=_d7)->_return_type:\n  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)\n  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)\n  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)\n  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)\n  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)\n  __dataclass_builtins_object__.__setattr__(self,'_f5',_f5)\n  __dataclass_builtins_object__.__setattr__(self,'_f6',_f6)\n  __dataclass_builtins_object__.__setattr__(self,'_f7',_f7)\n return __init__", __create_fn__))
def __create_fn__(_t0, _t1, _t2, _t3, _t4, _t5, _t6, _t7, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d7):
 def __init__(self,_f0:_t0,_f1:_t1,_f2:_t2,_f3:_t3,_f4:_t4,_f5:_t5,_f6:_t6,_f7:_t7=_d7)->_return_type:
  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)
  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)
  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)
  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)
  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)
  __dataclass_builtins_object__.__setattr__(self,'_f5',_f5)
  __dataclass_builtins_object__.__setattr__(self,'_f6',_f6)
  __dataclass_builtins_object__.__setattr__(self,'_f7',_f7)
 return __init__
TEMPLATES.append(("def __create_fn__(_t0, _t1, _t2, _t3, _t4, _t5, _t6, _t7, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d7):\n def __init__(self,_f0:_t0,_f1:_t1,_f2:_t2,_f3:_t3,_f4:_t4,_f5:_t5,_f6:_t6,_f7:_t7=_d7)->_return_type:\n  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)\n  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)\n  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)\n  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)\n  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)\n  __dataclass_builtins_object__.__setattr__(self,'_f5',_f5)\n  __dataclass_builtins_object__.__setattr__(self,'_f6',_f6)\n  __dataclass_builtins_object__.__setattr__(self,'_f7',_f7)\n return __init__", __create_fn__))
def __create_fn__(_t0, _t1, _t2, _t3, _t4, _t5, _t6, _t7, _t8, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d0, _d1, _d2, _d3, _d4, _d5, _d6, _d7, _d8):
 def __init__(self,*,_f0:_t0=_d0,_f1:_t1=_d1,_f2:_t2=_d2,_f3:_t3=_d3,_f4:_t4=_d4,_f5:_t5=_d5,_f6:_t6=_d6,_f7:_t7=_d7,_f8:_t8=_d8)->_return_type:
  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)
  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)
  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)
  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)
  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)
  __dataclass_builtins_object__.__setattr__(self,'_f5',_f5)
  __dataclass_builtins_object__.__setattr__(self,'_f6',_f6)
  __dataclass_builtins_object__.__setattr__(self,'_f7',_f7)
  __dataclass_builtins_object__.__setattr__(self,'_f8',_f8)
 return __init__
TEMPLATES.append(("def __create_fn__(_t0, _t1, _t2, _t3, _t4, _t5, _t6, _t7, _t8, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d0, _d1, _d2, _d3, _d4, _d5, _d6, _d7, _d8):\n def __init__(self,*,_f0:_t0=_d0,_f1:_t1=_d1,_f2:_t2=_d2,_f3:_t3=_d3,_f4:_t4=_d4,_f5:_t5=_d5,_f6:_t6=_d6,_f7:_t7=_d7,_f8:_t8=_d8)->_return_type:\n  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)\n  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)\n  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)\n  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)\n  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)\n  __dataclass_builtins_object__.__setattr__(self,'_f5',_f5)\n  __dataclass_builtins_object__.__setattr__(self,'_f6',_f6)\n  __dataclass_builtins_object__.__setattr__(self,'_f7',_f7)\n  __dataclass_builtins_object__.__setattr__(self,'_f8',_f8)\n return __init__", __create_fn__))
def __create_fn__(_t0, _t1, _t2, _t3, _t4, _t5, _t6, _t7, _t8, _t9, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d1, _d2, _d3, _d4, _d5, _d6, _d7, _d8, _d9):
 def __init__(self,*,_f0:_t0,_f1:_t1=_d1,_f2:_t2=_d2,_f3:_t3=_HAS_DEFAULT_FACTORY,_f4:_t4=_d4,_f5:_t5=_d5,_f6:_t6=_d6,_f7:_t7=_d7,_f8:_t8=_d8,_f9:_t9=_d9)->_return_type:
  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)
  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)
  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)
  __dataclass_builtins_object__.__setattr__(self,'_f3',_d3() if _f3 is _HAS_DEFAULT_FACTORY else _f3)
  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)
  __dataclass_builtins_object__.__setattr__(self,'_f5',_f5)
  __dataclass_builtins_object__.__setattr__(self,'_f6',_f6)
  __dataclass_builtins_object__.__setattr__(self,'_f7',_f7)
  __dataclass_builtins_object__.__setattr__(self,'_f8',_f8)
  __dataclass_builtins_object__.__setattr__(self,'_f9',_f9)
 return __init__
TEMPLATES.append(("def __create_fn__(_t0, _t1, _t2, _t3, _t4, _t5, _t6, _t7, _t8, _t9, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d1, _d2, _d3, _d4, _d5, _d6, _d7, _d8, _d9):\n def __init__(self,*,_f0:_t0,_f1:_t1=_d1,_f2:_t2=_d2,_f3:_t3=_HAS_DEFAULT_FACTORY,_f4:_t4=_d4,_f5:_t5=_d5,_f6:_t6=_d6,_f7:_t7=_d7,_f8:_t8=_d8,_f9:_t9=_d9)->_return_type:\n  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)\n  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)\n  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)\n  __dataclass_builtins_object__.__setattr__(self,'_f3',_d3() if _f3 is _HAS_DEFAULT_FACTORY else _f3)\n  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)\n  __dataclass_builtins_object__.__setattr__(self,'_f5',_f5)\n  __dataclass_builtins_object__.__setattr__(self,'_f6',_f6)\n  __dataclass_builtins_object__.__setattr__(self,'_f7',_f7)\n  __dataclass_builtins_object__.__setattr__(self,'_f8',_f8)\n  __dataclass_builtins_object__.__setattr__(self,'_f9',_f9)\n return __init__", __create_fn__))
def __create_fn__(_t0, _t1, _t2, _t3, _t4, _t5, _t6, _t7, _t8, _t9, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d1, _d2, _d3, _d4, _d5, _d6, _d7, _d8, _d9):
 def __init__(self,*,_f0:_t0,_f1:_t1=_d1,_f2:_t2=_d2,_f3:_t3=_d3,_f4:_t4=_d4,_f5:_t5=_d5,_f6:_t6=_d6,_f7:_t7=_d7,_f8:_t8=_d8,_f9:_t9=_d9)->_return_type:
  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)
  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)
  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)
  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)
  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)
  __dataclass_builtins_object__.__setattr__(self,'_f5',_f5)
  __dataclass_builtins_object__.__setattr__(self,'_f6',_f6)
  __dataclass_builtins_object__.__setattr__(self,'_f7',_f7)
  __dataclass_builtins_object__.__setattr__(self,'_f8',_f8)
  __dataclass_builtins_object__.__setattr__(self,'_f9',_f9)
 return __init__
TEMPLATES.append(("def __create_fn__(_t0, _t1, _t2, _t3, _t4, _t5, _t6, _t7, _t8, _t9, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d1, _d2, _d3, _d4, _d5, _d6, _d7, _d8, _d9):\n def __init__(self,*,_f0:_t0,_f1:_t1=_d1,_f2:_t2=_d2,_f3:_t3=_d3,_f4:_t4=_d4,_f5:_t5=_d5,_f6:_t6=_d6,_f7:_t7=_d7,_f8:_t8=_d8,_f9:_t9=_d9)->_return_type:\n  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)\n  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)\n  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)\n  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)\n  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)\n  __dataclass_builtins_object__.__setattr__(self,'_f5',_f5)\n  __dataclass_builtins_object__.__setattr__(self,'_f6',_f6)\n  __dataclass_builtins_object__.__setattr__(self,'_f7',_f7)\n  __dataclass_builtins_object__.__setattr__(self,'_f8',_f8)\n  __dataclass_builtins_object__.__setattr__(self,'_f9',_f9)\n return __init__", __create_fn__))
def __create_fn__(_t0, _t1, _t2, _t3, _t4, _t5, _t6, _t7, _t8, _t9, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d1, _d2, _d4, _d5, _d6, _d7, _d8, _d9):
 def __init__(self,*,_f0:_t0,_f1:_t1=_d1,_f2:_t2=_d2,_f3:_t3,_f4:_t4=_d4,_f5:_t5=_HAS_DEFAULT_FACTORY,_f6:_t6=_d6,_f7:_t7=_d7,_f8:_t8=_d8,_f9:_t9=_d9)->_return_type:
  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)
  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)
  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)
  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)
  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)
  __dataclass_builtins_object__.__setattr__(self,'_f5',_d5() if _f5 is _HAS_DEFAULT_FACTORY else _f5)
  __dataclass_builtins_object__.__setattr__(self,'_f6',_f6)
  __dataclass_builtins_object__.__setattr__(self,'_f7',_f7)
  __dataclass_builtins_object__.__setattr__(self,'_f8',_f8)
  __dataclass_builtins_object__.__setattr__(self,'_f9',_f9)
 return __init__
TEMPLATES.append(("def __create_fn__(_t0, _t1, _t2, _t3, _t4, _t5, _t6, _t7, _t8, _t9, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d1, _d2, _d4, _d5, _d6, _d7, _d8, _d9):\n def __init__(self,*,_f0:_t0,_f1:_t1=_d1,_f2:_t2=_d2,_f3:_t3,_f4:_t4=_d4,_f5:_t5=_HAS_DEFAULT_FACTORY,_f6:_t6=_d6,_f7:_t7=_d7,_f8:_t8=_d8,_f9:_t9=_d9)->_return_type:\n  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)\n  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)\n  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)\n  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)\n  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)\n  __dataclass_builtins_object__.__setattr__(self,'_f5',_d5() if _f5 is _HAS_DEFAULT_FACTORY else _f5)\n  __dataclass_builtins_object__.__setattr__(self,'_f6',_f6)\n  __dataclass_builtins_object__.__setattr__(self,'_f7',_f7)\n  __dataclass_builtins_object__.__setattr__(self,'_f8',_f8)\n  __dataclass_builtins_object__.__setattr__(self,'_f9',_f9)\n return __init__", __create_fn__))
def __create_fn__(_t0, _t1, _t2, _t3, _t4, _t5, _t6, _t7, _t8, _t9, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d3, _d4, _d5, _d6, _d7, _d8, _d9):
 def __init__(self,*,_f0:_t0,_f1:_t1,_f2:_t2,_f3:_t3=_d3,_f4:_t4=_d4,_f5:_t5=_HAS_DEFAULT_FACTORY,_f6:_t6=_d6,_f7:_t7=_d7,_f8:_t8=_d8,_f9:_t9=_d9)->_return_type:
  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)
  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)
  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)
  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)
  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)
  __dataclass_builtins_object__.__setattr__(self,'_f5',_d5() if _f5 is _HAS_DEFAULT_FACTORY else _f5)
  __dataclass_builtins_object__.__setattr__(self,'_f6',_f6)
  __dataclass_builtins_object__.__setattr__(self,'_f7',_f7)
  __dataclass_builtins_object__.__setattr__(self,'_f8',_f8)
  __dataclass_builtins_object__.__setattr__(self,'_f9',_f9)
 return __init__
TEMPLATES.append(("def __create_fn__(_t0, _t1, _t2, _t3, _t4, _t5, _t6, _t7, _t8, _t9, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d3, _d4, _d5, _d6, _d7, _d8, _d9):\n def __init__(self,*,_f0:_t0,_f1:_t1,_f2:_t2,_f3:_t3=_d3,_f4:_t4=_d4,_f5:_t5=_HAS_DEFAULT_FACTORY,_f6:_t6=_d6,_f7:_t7=_d7,_f8:_t8=_d8,_f9:_t9=_d9)->_return_type:\n  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)\n  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)\n  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)\n  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)\n  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)\n  __dataclass_builtins_object__.__setattr__(self,'_f5',_d5() if _f5 is _HAS_DEFAULT_FACTORY else _f5)\n  __dataclass_builtins_object__.__setattr__(self,'_f6',_f6)\n  __dataclass_builtins_object__.__setattr__(self,'_f7',_f7)\n  __dataclass_builtins_object__.__setattr__(self,'_f8',_f8)\n  __dataclass_builtins_object__.__setattr__(self,'_f9',_f9)\n return __init__", __create_fn__))
def __create_fn__(_t0, _t1, _t2, _t3, _t4, _t5, _t6, _t7, _t8, _t9, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d3, _d4, _d5, _d6, _d7, _d8, _d9):
 def __init__(self,*,_f0:_t0,_f1:_t1,_f2:_t2,_f3:_t3=_d3,_f4:_t4=_d4,_f5:_t5=_d5,_f6:_t6=_d6,_f7:_t7=_d7,_f8:_t8=_d8,_f9:_t9=_HAS_DEFAULT_FACTORY)->_return_type:
  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)
  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)
  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)
  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)
  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)
  __dataclass_builtins_object__.__setattr__(self,'_f5',_f5)
  __dataclass_builtins_object__.__setattr__(self,'_f6',_f6)
  __dataclass_builtins_object__.__setattr__(self,'_f7',_f7)
  __dataclass_builtins_object__.__setattr__(self,'_f8',_f8)
  __dataclass_builtins_object__.__setattr__(self,'_f9',_d9() if _f9 is _HAS_DEFAULT_FACTORY else _f9)
 return __init__
TEMPLATES.append(("def __create_fn__(_t0, _t1, _t2, _t3, _t4, _t5, _t6, _t7, _t8, _t9, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d3, _d4, _d5, _d6, _d7, _d8, _d9):\n def __init__(self,*,_f0:_t0,_f1:_t1,_f2:_t2,_f3:_t3=_d3,_f4:_t4=_d4,_f5:_t5=_d5,_f6:_t6=_d6,_f7:_t7=_d7,_f8:_t8=_d8,_f9:_t9=_HAS_DEFAULT_FACTORY)->_return_type:\n  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)\n  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)\n  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)\n  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)\n  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)\n  __dataclass_builtins_object__.__setattr__(self,'_f5',_f5)\n  __dataclass_builtins_object__.__setattr__(self,'_f6',_f6)\n  __dataclass_builtins_object__.__setattr__(self,'_f7',_f7)\n  __dataclass_builtins_object__.__setattr__(self,'_f8',_f8)\n  __dataclass_builtins_object__.__setattr__(self,'_f9',_d9() if _f9 is _HAS_DEFAULT_FACTORY else _f9)\n return __init__", __create_fn__))
def __create_fn__(_t0, _t1, _t2, _t3, _t4, _t5, _t6, _t7, _t8, _t9, _t10, _t11, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d0, _d1, _d2, _d3, _d4, _d5, _d6, _d7, _d8, _d9, _d10, _d11):
 def __init__(self,*,_f0:_t0=_d0,_f1:_t1=_d1,_f2:_t2=_d2,_f3:_t3=_d3,_f4:_t4=_d4,_f5:_t5=_d5,_f6:_t6=_d6,_f7:_t7=_d7,_f8:_t8=_d8,_f9:_t9=_d9,_f10:_t10=_d10,_f11:_t11=_d11)->_return_type:
  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)
  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)
  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)
  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)
  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)
  __dataclass_builtins_object__.__setattr__(self,'_f5',_f5)
  __dataclass_builtins_object__.__setattr__(self,'_f6',_f6)
  __dataclass_builtins_object__.__setattr__(self,'_f7',_f7)
  __dataclass_builtins_object__.__setattr__(self,'_f8',_f8)
  __dataclass_builtins_object__.__setattr__(self,'_f9',_f9)
  __dataclass_builtins_object__.__setattr__(self,'_f10',_f10)
  __dataclass_builtins_object__.__setattr__(self,'_f11',_f11)
 return __init__
TEMPLATES.append(("def __create_fn__(_t0, _t1, _t2, _t3, _t4, _t5, _t6, _t7, _t8, _t9, _t10, _t11, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d0, _d1, _d2, _d3, _d4, _d5, _d6, _d7, _d8, _d9, _d10, _d11):\n def __init__(self,*,_f0:_t0=_d0,_f1:_t1=_d1,_f2:_t2=_d2,_f3:_t3=_d3,_f4:_t4=_d4,_f5:_t5=_d5,_f6:_t6=_d6,_f7:_t7=_d7,_f8:_t8=_d8,_f9:_t9=_d9,_f10:_t10=_d10,_f11:_t11=_d11)->_return_type:\n  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)\n  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)\n  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)\n  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)\n  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)\n  __dataclass_builtins_object__.__setattr__(self,'_f5',_f5)\n  __dataclass_builtins_object__.__setattr__(self,'_f6',_f6)\n  __dataclass_builtins_object__.__setattr__(self,'_f7',_f7)\n  __dataclass_builtins_object__.__setattr__(self,'_f8',_f8)\n  __dataclass_builtins_object__.__setattr__(self,'_f9',_f9)\n  __dataclass_builtins_object__.__setattr__(self,'_f10',_f10)\n  __dataclass_builtins_object__.__setattr__(self,'_f11',_f11)\n return __init__", __create_fn__))
def __create_fn__(_t0, _t1, _t2, _t3, _t4, _t5, _t6, _t7, _t8, _t9, _t10, _t11, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d8, _d9, _d10, _d11):
 def __init__(self,_f0:_t0,_f1:_t1,_f2:_t2,_f3:_t3,_f4:_t4,_f5:_t5,_f6:_t6,_f7:_t7,_f8:_t8=_d8,_f9:_t9=_d9,_f10:_t10=_d10,_f11:_t11=_d11)->_return_type:
  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)
  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)
  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)
  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)
  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)
  __dataclass_builtins_object__.__setattr__(self,'_f5',_f5)
  __dataclass_builtins_object__.__setattr__(self,'_f6',_f6)
  __dataclass_builtins_object__.__setattr__(self,'_f7',_f7)
  __dataclass_builtins_object__.__setattr__(self,'_f8',_f8)
  __dataclass_builtins_object__.__setattr__(self,'_f9',_f9)
  __dataclass_builtins_object__.__setattr__(self,'_f10',_f10)
  __dataclass_builtins_object__.__setattr__(self,'_f11',_f11)
 return __init__
TEMPLATES.append(("def __create_fn__(_t0, _t1, _t2, _t3, _t4, _t5, _t6, _t7, _t8, _t9, _t10, _t11, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d8, _d9, _d10, _d11):\n def __init__(self,_f0:_t0,_f1:_t1,_f2:_t2,_f3:_t3,_f4:_t4,_f5:_t5,_f6:_t6,_f7:_t7,_f8:_t8=_d8,_f9:_t9=_d9,_f10:_t10=_d10,_f11:_t11=_d11)->_return_type:\n  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)\n  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)\n  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)\n  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)\n  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)\n  __dataclass_builtins_object__.__setattr__(self,'_f5',_f5)\n  __dataclass_builtins_object__.__setattr__(self,'_f6',_f6)\n  __dataclass_builtins_object__.__setattr__(self,'_f7',_f7)\n  __dataclass_builtins_object__.__setattr__(self,'_f8',_f8)\n  __dataclass_builtins_object__.__setattr__(self,'_f9',_f9)\n  __dataclass_builtins_object__.__setattr__(self,'_f10',_f10)\n  __dataclass_builtins_object__.__setattr__(self,'_f11',_f11)\n return __init__", __create_fn__))
def __create_fn__(_t0, _t1, _t2, _t3, _t4, _t5, _t6, _t7, _t8, _t9, _t10, _t11, _t12, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d2, _d3, _d4, _d5, _d6, _d7, _d8, _d9, _d10, _d11, _d12):
 def __init__(self,*,_f0:_t0,_f1:_t1,_f2:_t2=_d2,_f3:_t3=_d3,_f4:_t4=_d4,_f5:_t5=_d5,_f6:_t6=_d6,_f7:_t7=_d7,_f8:_t8=_d8,_f9:_t9=_d9,_f10:_t10=_d10,_f11:_t11=_d11,_f12:_t12=_HAS_DEFAULT_FACTORY)->_return_type:
  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)
  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)
  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)
  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)
  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)
  __dataclass_builtins_object__.__setattr__(self,'_f5',_f5)
  __dataclass_builtins_object__.__setattr__(self,'_f6',_f6)
  __dataclass_builtins_object__.__setattr__(self,'_f7',_f7)
  __dataclass_builtins_object__.__setattr__(self,'_f8',_f8)
  __dataclass_builtins_object__.__setattr__(self,'_f9',_f9)
  __dataclass_builtins_object__.__setattr__(self,'_f10',_f10)
  __dataclass_builtins_object__.__setattr__(self,'_f11',_f11)
  __dataclass_builtins_object__.__setattr__(self,'_f12',_d12() if _f12 is _HAS_DEFAULT_FACTORY else _f12)
 return __init__
TEMPLATES.append(("def __create_fn__(_t0, _t1, _t2, _t3, _t4, _t5, _t6, _t7, _t8, _t9, _t10, _t11, _t12, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d2, _d3, _d4, _d5, _d6, _d7, _d8, _d9, _d10, _d11, _d12):\n def __init__(self,*,_f0:_t0,_f1:_t1,_f2:_t2=_d2,_f3:_t3=_d3,_f4:_t4=_d4,_f5:_t5=_d5,_f6:_t6=_d6,_f7:_t7=_d7,_f8:_t8=_d8,_f9:_t9=_d9,_f10:_t10=_d10,_f11:_t11=_d11,_f12:_t12=_HAS_DEFAULT_FACTORY)->_return_type:\n  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)\n  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)\n  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)\n  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)\n  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)\n  __dataclass_builtins_object__.__setattr__(self,'_f5',_f5)\n  __dataclass_builtins_object__.__setattr__(self,'_f6',_f6)\n  __dataclass_builtins_object__.__setattr__(self,'_f7',_f7)\n  __dataclass_builtins_object__.__setattr__(self,'_f8',_f8)\n  __dataclass_builtins_object__.__setattr__(self,'_f9',_f9)\n  __dataclass_builtins_object__.__setattr__(self,'_f10',_f10)\n  __dataclass_builtins_object__.__setattr__(self,'_f11',_f11)\n  __dataclass_builtins_object__.__setattr__(self,'_f12',_d12() if _f12 is _HAS_DEFAULT_FACTORY else _f12)\n return __init__", __create_fn__))
def __create_fn__(_t0, _t1, _t2, _t3, _t4, _t5, _t6, _t7, _t8, _t9, _t10, _t11, _t12, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d5, _d6, _d8, _d12):
 def __init__(self,*,_f0:_t0,_f1:_t1,_f2:_t2,_f3:_t3,_f4:_t4,_f5:_t5=_d5,_f6:_t6=_d6,_f7:_t7,_f8:_t8=_d8,_f9:_t9,_f10:_t10,_f11:_t11,_f12:_t12=_HAS_DEFAULT_FACTORY)->_return_type:
  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)
  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)
  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)
  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)
  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)
  __dataclass_builtins_object__.__setattr__(self,'_f5',_f5)
  __dataclass_builtins_object__.__setattr__(self,'_f6',_f6)
  __dataclass_builtins_object__.__setattr__(self,'_f7',_f7)
  __dataclass_builtins_object__.__setattr__(self,'_f8',_f8)
  __dataclass_builtins_object__.__setattr__(self,'_f9',_f9)
  __dataclass_builtins_object__.__setattr__(self,'_f10',_f10)
  __dataclass_builtins_object__.__setattr__(self,'_f11',_f11)
  __dataclass_builtins_object__.__setattr__(self,'_f12',_d12() if _f12 is _HAS_DEFAULT_FACTORY else _f12)
 return __init__
TEMPLATES.append(("def __create_fn__(_t0, _t1, _t2, _t3, _t4, _t5, _t6, _t7, _t8, _t9, _t10, _t11, _t12, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d5, _d6, _d8, _d12):\n def __init__(self,*,_f0:_t0,_f1:_t1,_f2:_t2,_f3:_t3,_f4:_t4,_f5:_t5=_d5,_f6:_t6=_d6,_f7:_t7,_f8:_t8=_d8,_f9:_t9,_f10:_t10,_f11:_t11,_f12:_t12=_HAS_DEFAULT_FACTORY)->_return_type:\n  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)\n  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)\n  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)\n  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)\n  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)\n  __dataclass_builtins_object__.__setattr__(self,'_f5',_f5)\n  __dataclass_builtins_object__.__setattr__(self,'_f6',_f6)\n  __dataclass_builtins_object__.__setattr__(self,'_f7',_f7)\n  __dataclass_builtins_object__.__setattr__(self,'_f8',_f8)\n  __dataclass_builtins_object__.__setattr__(self,'_f9',_f9)\n  __dataclass_builtins_object__.__setattr__(self,'_f10',_f10)\n  __dataclass_builtins_object__.__setattr__(self,'_f11',_f11)\n  __dataclass_builtins_object__.__setattr__(self,'_f12',_d12() if _f12 is _HAS_DEFAULT_FACTORY else _f12)\n return __init__", __create_fn__))
def __create_fn__(_t0, _t1, _t2, _t3, _t4, _t5, _t6, _t7, _t8, _t9, _t10, _t11, _t12, _t13, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d0, _d3, _d5, _d6, _d7, _d9, _d10, _d11, _d12, _d13):
 def __init__(self,*,_f0:_t0=_d0,_f1:_t1,_f2:_t2,_f3:_t3=_d3,_f4:_t4,_f5:_t5=_d5,_f6:_t6=_d6,_f7:_t7=_d7,_f8:_t8,_f9:_t9=_d9,_f10:_t10=_d10,_f11:_t11=_d11,_f12:_t12=_d12,_f13:_t13=_d13)->_return_type:
  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)
  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)
  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)
  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)
  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)
  __dataclass_builtins_object__.__setattr__(self,'_f5',_f5)
  __dataclass_builtins_object__.__setattr__(self,'_f6',_f6)
  __dataclass_builtins_object__.__setattr__(self,'_f7',_f7)
  __dataclass_builtins_object__.__setattr__(self,'_f8',_f8)
  __dataclass_builtins_object__.__setattr__(self,'_f9',_f9)
  __dataclass_builtins_object__.__setattr__(self,'_f10',_f10)
  __dataclass_builtins_object__.__setattr__(self,'_f11',_f11)
  __dataclass_builtins_object__.__setattr__(self,'_f12',_f12)
  __dataclass_builtins_object__.__setattr__(self,'_f13',_f13)
 return __init__
TEMPLATES.append(("def __create_fn__(_t0, _t1, _t2, _t3, _t4, _t5, _t6, _t7, _t8, _t9, _t10, _t11, _t12, _t13, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d0, _d3, _d5, _d6, _d7, _d9, _d10, _d11, _d12, _d13):\n def __init__(self,*,_f0:_t0=_d0,_f1:_t1,_f2:_t2,_f3:_t3=_d3,_f4:_t4,_f5:_t5=_d5,_f6:_t6=_d6,_f7:_t7=_d7,_f8:_t8,_f9:_t9=_d9,_f10:_t10=_d10,_f11:_t11=_d11,_f12:_t12=_d12,_f13:_t13=_d13)->_return_type:\n  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)\n  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)\n  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)\n  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)\n  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)\n  __dataclass_builtins_object__.__setattr__(self,'_f5',_f5)\n  __dataclass_builtins_object__.__setattr__(self,'_f6',_f6)\n  __dataclass_builtins_object__.__setattr__(self,'_f7',_f7)\n  __dataclass_builtins_object__.__setattr__(self,'_f8',_f8)\n  __dataclass_builtins_object__.__setattr__(self,'_f9',_f9)\n  __dataclass_builtins_object__.__setattr__(self,'_f10',_f10)\n  __dataclass_builtins_object__.__setattr__(self,'_f11',_f11)\n  __dataclass_builtins_object__.__setattr__(self,'_f12',_f12)\n  __dataclass_builtins_object__.__setattr__(self,'_f13',_f13)\n return __init__", __create_fn__))
def __create_fn__(_t0, _t1, _t2, _t3, _t4, _t5, _t6, _t7, _t8, _t9, _t10, _t11, _t12, _t13, _t14, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d6, _d7, _d8, _d9, _d10, _d11, _d12, _d13, _d14):
 def __init__(self,*,_f0:_t0,_f1:_t1,_f2:_t2,_f3:_t3,_f4:_t4,_f5:_t5,_f6:_t6=_d6,_f7:_t7=_d7,_f8:_t8=_d8,_f9:_t9=_d9,_f10:_t10=_d10,_f11:_t11=_d11,_f12:_t12=_d12,_f13:_t13=_HAS_DEFAULT_FACTORY,_f14:_t14=_d14)->_return_type:
  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)
  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)
  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)
  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)
  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)
  __dataclass_builtins_object__.__setattr__(self,'_f5',_f5)
  __dataclass_builtins_object__.__setattr__(self,'_f6',_f6)
  __dataclass_builtins_object__.__setattr__(self,'_f7',_f7)
  __dataclass_builtins_object__.__setattr__(self,'_f8',_f8)
  __dataclass_builtins_object__.__setattr__(self,'_f9',_f9)
  __dataclass_builtins_object__.__setattr__(self,'_f10',_f10)
  __dataclass_builtins_object__.__setattr__(self,'_f11',_f11)
  __dataclass_builtins_object__.__setattr__(self,'_f12',_f12)
  __dataclass_builtins_object__.__setattr__(self,'_f13',_d13() if _f13 is _HAS_DEFAULT_FACTORY else _f13)
  __dataclass_builtins_object__.__setattr__(self,'_f14',_f14)
 return __init__
TEMPLATES.append(("def __create_fn__(_t0, _t1, _t2, _t3, _t4, _t5, _t6, _t7, _t8, _t9, _t10, _t11, _t12, _t13, _t14, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d6, _d7, _d8, _d9, _d10, _d11, _d12, _d13, _d14):\n def __init__(self,*,_f0:_t0,_f1:_t1,_f2:_t2,_f3:_t3,_f4:_t4,_f5:_t5,_f6:_t6=_d6,_f7:_t7=_d7,_f8:_t8=_d8,_f9:_t9=_d9,_f10:_t10=_d10,_f11:_t11=_d11,_f12:_t12=_d12,_f13:_t13=_HAS_DEFAULT_FACTORY,_f14:_t14=_d14)->_return_type:\n  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)\n  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)\n  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)\n  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)\n  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)\n  __dataclass_builtins_object__.__setattr__(self,'_f5',_f5)\n  __dataclass_builtins_object__.__setattr__(self,'_f6',_f6)\n  __dataclass_builtins_object__.__setattr__(self,'_f7',_f7)\n  __dataclass_builtins_object__.__setattr__(self,'_f8',_f8)\n  __dataclass_builtins_object__.__setattr__(self,'_f9',_f9)\n  __dataclass_builtins_object__.__setattr__(self,'_f10',_f10)\n  __dataclass_builtins_object__.__setattr__(self,'_f11',_f11)\n  __dataclass_builtins_object__.__setattr__(self,'_f12',_f12)\n  __dataclass_builtins_object__.__setattr__(self,'_f13',_d13() if _f13 is _HAS_DEFAULT_FACTORY else _f13)\n  __dataclass_builtins_object__.__setattr__(self,'_f14',_f14)\n return __init__", __create_fn__))
def __create_fn__(_t0, _t1, _t2, _t3, _t4, _t5, _t6, _t7, _t8, _t9, _t10, _t11, _t12, _t13, _t14, _t15, _t16, _t17, _t18, _t19, _t20, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d3, _d4, _d5, _d6, _d7, _d8, _d9, _d10, _d11, _d12, _d13, _d14, _d15, _d16, _d17, _d18, _d19, _d20):
 def __init__(self,*,_f0:_t0,_f1:_t1,_f2:_t2,_f3:_t3=_d3,_f4:_t4=_d4,_f5:_t5=_d5,_f6:_t6=_d6,_f7:_t7=_HAS_DEFAULT_FACTORY,_f8:_t8=_d8,_f9:_t9=_d9,_f10:_t10=_d10,_f11:_t11=_d11,_f12:_t12=_d12,_f13:_t13=_d13,_f14:_t14=_d14,_f15:_t15=_d15,_f16:_t16=_d16,_f17:_t17=_HAS_DEFAULT_FACTORY,_f18:_t18=_HAS_DEFAULT_FACTORY,_f19:_t19=_d19,_f20:_t20=_d20)->_return_type:
  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)
  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)
  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)
  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)
  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)
  __dataclass_builtins_object__.__setattr__(self,'_f5',_f5)
  __dataclass_builtins_object__.__setattr__(self,'_f6',_f6)
  __dataclass_builtins_object__.__setattr__(self,'_f7',_d7() if _f7 is _HAS_DEFAULT_FACTORY else _f7)
  __dataclass_builtins_object__.__setattr__(self,'_f8',_f8)
  __dataclass_builtins_object__.__setattr__(self,'_f9',_f9)
  __dataclass_builtins_object__.__setattr__(self,'_f10',_f10)
  __dataclass_builtins_object__.__setattr__(self,'_f11',_f11)
  __dataclass_builtins_object__.__setattr__(self,'_f12',_f12)
  __dataclass_builtins_object__.__setattr__(self,'_f13',_f13)
  __dataclass_builtins_object__.__setattr__(self,'_f14',_f14)
  __dataclass_builtins_object__.__setattr__(self,'_f15',_f15)
  __dataclass_builtins_object__.__setattr__(self,'_f16',_f16)
  __dataclass_builtins_object__.__setattr__(self,'_f17',_d17() if _f17 is _HAS_DEFAULT_FACTORY else _f17)
  __dataclass_builtins_object__.__setattr__(self,'_f18',_d18() if _f18 is _HAS_DEFAULT_FACTORY else _f18)
  __dataclass_builtins_object__.__setattr__(self,'_f19',_f19)
  __dataclass_builtins_object__.__setattr__(self,'_f20',_f20)
 return __init__
TEMPLATES.append(("def __create_fn__(_t0, _t1, _t2, _t3, _t4, _t5, _t6, _t7, _t8, _t9, _t10, _t11, _t12, _t13, _t14, _t15, _t16, _t17, _t18, _t19, _t20, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d3, _d4, _d5, _d6, _d7, _d8, _d9, _d10, _d11, _d12, _d13, _d14, _d15, _d16, _d17, _d18, _d19, _d20):\n def __init__(self,*,_f0:_t0,_f1:_t1,_f2:_t2,_f3:_t3=_d3,_f4:_t4=_d4,_f5:_t5=_d5,_f6:_t6=_d6,_f7:_t7=_HAS_DEFAULT_FACTORY,_f8:_t8=_d8,_f9:_t9=_d9,_f10:_t10=_d10,_f11:_t11=_d11,_f12:_t12=_d12,_f13:_t13=_d13,_f14:_t14=_d14,_f15:_t15=_d15,_f16:_t16=_d16,_f17:_t17=_HAS_DEFAULT_FACTORY,_f18:_t18=_HAS_DEFAULT_FACTORY,_f19:_t19=_d19,_f20:_t20=_d20)->_return_type:\n  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)\n  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)\n  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)\n  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)\n  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)\n  __dataclass_builtins_object__.__setattr__(self,'_f5',_f5)\n  __dataclass_builtins_object__.__setattr__(self,'_f6',_f6)\n  __dataclass_builtins_object__.__setattr__(self,'_f7',_d7() if _f7 is _HAS_DEFAULT_FACTORY else _f7)\n  __dataclass_builtins_object__.__setattr__(self,'_f8',_f8)\n  __dataclass_builtins_object__.__setattr__(self,'_f9',_f9)\n  __dataclass_builtins_object__.__setattr__(self,'_f10',_f10)\n  __dataclass_builtins_object__.__setattr__(self,'_f11',_f11)\n  __dataclass_builtins_object__.__setattr__(self,'_f12',_f12)\n  __dataclass_builtins_object__.__setattr__(self,'_f13',_f13)\n  __dataclass_builtins_object__.__setattr__(self,'_f14',_f14)\n  __dataclass_builtins_object__.__setattr__(self,'_f15',_f15)\n  __dataclass_builtins_object__.__setattr__(self,'_f16',_f16)\n  __dataclass_builtins_object__.__setattr__(self,'_f17',_d17() if _f17 is _HAS_DEFAULT_FACTORY else _f17)\n  __dataclass_builtins_object__.__setattr__(self,'_f18',_d18() if _f18 is _HAS_DEFAULT_FACTORY else _f18)\n  __dataclass_builtins_object__.__setattr__(self,'_f19',_f19)\n  __dataclass_builtins_object__.__setattr__(self,'_f20',_f20)\n return __init__", __create_fn__))
def __create_fn__(_t0, _t1, _t2, _t3, _t4, _t5, _t6, _t7, _t8, _t9, _t10, _t11, _t12, _t13, _t14, _t15, _t16, _t17, _t18, _t19, _t20, _t21, _t22, _t23, _t24, _t25, _t26, _t27, _t28, _t29, _t30, _t31, _t32, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d3, _d4, _d5, _d7, _d8, _d9, _d12, _d13, _d14, _d15, _d16, _d17, _d18, _d19, _d20, _d21, _d22, _d25, _d26, _d27, _d28, _d29, _d30, _d31, _d32):
 def __init__(self,*,_f0:_t0,_f1:_t1,_f2:_t2,_f3:_t3=_d3,_f4:_t4=_d4,_f5:_t5=_HAS_DEFAULT_FACTORY,_f6:_t6,_f7:_t7=_HAS_DEFAULT_FACTORY,_f8:_t8=_HAS_DEFAULT_FACTORY,_f9:_t9=_d9,_f10:_t10,_f11:_t11,_f12:_t12=_HAS_DEFAULT_FACTORY,_f13:_t13=_d13,_f14:_t14=_d14,_f15:_t15=_d15,_f16:_t16=_d16,_f17:_t17=_d17,_f18:_t18=_d18,_f19:_t19=_d19,_f20:_t20=_d20,_f21:_t21=_d21,_f22:_t22=_d22,_f23:_t23,_f24:_t24,_f25:_t25=_HAS_DEFAULT_FACTORY,_f26:_t26=_d26,_f27:_t27=_d27,_f28:_t28=_HAS_DEFAULT_FACTORY,_f29:_t29=_d29,_f30:_t30=_d30,_f31:_t31=_d31,_f32:_t32=_d32)->_return_type:
  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)
  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)
  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)
  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)
  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)
  __dataclass_builtins_object__.__setattr__(self,'_f5',_d5() if _f5 is _HAS_DEFAULT_FACTORY else _f5)
  __dataclass_builtins_object__.__setattr__(self,'_f6',_f6)
  __dataclass_builtins_object__.__setattr__(self,'_f7',_d7() if _f7 is _HAS_DEFAULT_FACTORY else _f7)
  __dataclass_builtins_object__.__setattr__(self,'_f8',_d8() if _f8 is _HAS_DEFAULT_FACTORY else _f8)
  __dataclass_builtins_object__.__setattr__(self,'_f9',_f9)
  __dataclass_builtins_object__.__setattr__(self,'_f10',_f10)
  __dataclass_builtins_object__.__setattr__(self,'_f11',_f11)
  __dataclass_builtins_object__.__setattr__(self,'_f12',_d12() if _f12 is _HAS_DEFAULT_FACTORY else _f12)
  __dataclass_builtins_object__.__setattr__(self,'_f13',_f13)
  __dataclass_builtins_object__.__setattr__(self,'_f14',_f14)
  __dataclass_builtins_object__.__setattr__(self,'_f15',_f15)
  __dataclass_builtins_object__.__setattr__(self,'_f16',_f16)
  __dataclass_builtins_object__.__setattr__(self,'_f17',_f17)
  __dataclass_builtins_object__.__setattr__(self,'_f18',_f18)
  __dataclass_builtins_object__.__setattr__(self,'_f19',_f19)
  __dataclass_builtins_object__.__setattr__(self,'_f20',_f20)
  __dataclass_builtins_object__.__setattr__(self,'_f21',_f21)
  __dataclass_builtins_object__.__setattr__(self,'_f22',_f22)
  __dataclass_builtins_object__.__setattr__(self,'_f23',_f23)
  __dataclass_builtins_object__.__setattr__(self,'_f24',_f24)
  __dataclass_builtins_object__.__setattr__(self,'_f25',_d25() if _f25 is _HAS_DEFAULT_FACTORY else _f25)
  __dataclass_builtins_object__.__setattr__(self,'_f26',_f26)
  __dataclass_builtins_object__.__setattr__(self,'_f27',_f27)
  __dataclass_builtins_object__.__setattr__(self,'_f28',_d28() if _f28 is _HAS_DEFAULT_FACTORY else _f28)
  __dataclass_builtins_object__.__setattr__(self,'_f29',_f29)
  __dataclass_builtins_object__.__setattr__(self,'_f30',_f30)
  __dataclass_builtins_object__.__setattr__(self,'_f31',_f31)
  __dataclass_builtins_object__.__setattr__(self,'_f32',_f32)
 return __init__
TEMPLATES.append(("def __create_fn__(_t0, _t1, _t2, _t3, _t4, _t5, _t6, _t7, _t8, _t9, _t10, _t11, _t12, _t13, _t14, _t15, _t16, _t17, _t18, _t19, _t20, _t21, _t22, _t23, _t24, _t25, _t26, _t27, _t28, _t29, _t30, _t31, _t32, MISSING, _HAS_DEFAULT_FACTORY, __dataclass_builtins_object__, _return_type, _d3, _d4, _d5, _d7, _d8, _d9, _d12, _d13, _d14, _d15, _d16, _d17, _d18, _d19, _d20, _d21, _d22, _d25, _d26, _d27, _d28, _d29, _d30, _d31, _d32):\n def __init__(self,*,_f0:_t0,_f1:_t1,_f2:_t2,_f3:_t3=_d3,_f4:_t4=_d4,_f5:_t5=_HAS_DEFAULT_FACTORY,_f6:_t6,_f7:_t7=_HAS_DEFAULT_FACTORY,_f8:_t8=_HAS_DEFAULT_FACTORY,_f9:_t9=_d9,_f10:_t10,_f11:_t11,_f12:_t12=_HAS_DEFAULT_FACTORY,_f13:_t13=_d13,_f14:_t14=_d14,_f15:_t15=_d15,_f16:_t16=_d16,_f17:_t17=_d17,_f18:_t18=_d18,_f19:_t19=_d19,_f20:_t20=_d20,_f21:_t21=_d21,_f22:_t22=_d22,_f23:_t23,_f24:_t24,_f25:_t25=_HAS_DEFAULT_FACTORY,_f26:_t26=_d26,_f27:_t27=_d27,_f28:_t28=_HAS_DEFAULT_FACTORY,_f29:_t29=_d29,_f30:_t30=_d30,_f31:_t31=_d31,_f32:_t32=_d32)->_return_type:\n  __dataclass_builtins_object__.__setattr__(self,'_f0',_f0)\n  __dataclass_builtins_object__.__setattr__(self,'_f1',_f1)\n  __dataclass_builtins_object__.__setattr__(self,'_f2',_f2)\n  __dataclass_builtins_object__.__setattr__(self,'_f3',_f3)\n  __dataclass_builtins_object__.__setattr__(self,'_f4',_f4)\n  __dataclass_builtins_object__.__setattr__(self,'_f5',_d5() if _f5 is _HAS_DEFAULT_FACTORY else _f5)\n  __dataclass_builtins_object__.__setattr__(self,'_f6',_f6)\n  __dataclass_builtins_object__.__setattr__(self,'_f7',_d7() if _f7 is _HAS_DEFAULT_FACTORY else _f7)\n  __dataclass_builtins_object__.__setattr__(self,'_f8',_d8() if _f8 is _HAS_DEFAULT_FACTORY else _f8)\n  __dataclass_builtins_object__.__setattr__(self,'_f9',_f9)\n  __dataclass_builtins_object__.__setattr__(self,'_f10',_f10)\n  __dataclass_builtins_object__.__setattr__(self,'_f11',_f11)\n  __dataclass_builtins_object__.__setattr__(self,'_f12',_d12() if _f12 is _HAS_DEFAULT_FACTORY else _f12)\n  __dataclass_builtins_object__.__setattr__(self,'_f13',_f13)\n  __dataclass_builtins_object__.__setattr__(self,'_f14',_f14)\n  __dataclass_builtins_object__.__setattr__(self,'_f15',_f15)\n  __dataclass_builtins_object__.__setattr__(self,'_f16',_f16)\n  __dataclass_builtins_object__.__setattr__(self,'_f17',_f17)\n  __dataclass_builtins_object__.__setattr__(self,'_f18',_f18)\n  __dataclass_builtins_object__.__setattr__(self,'_f19',_f19)\n  __dataclass_builtins_object__.__setattr__(self,'_f20',_f20)\n  __dataclass_builtins_object__.__setattr__(self,'_f21',_f21)\n  __dataclass_builtins_object__.__setattr__(self,'_f22',_f22)\n  __dataclass_builtins_object__.__setattr__(self,'_f23',_f23)\n  __dataclass_builtins_object__.__setattr__(self,'_f24',_f24)\n  __dataclass_builtins_object__.__setattr__(self,'_f25',_d25() if _f25 is _HAS_DEFAULT_FACTORY else _f25)\n  __dataclass_builtins_object__.__setattr__(self,'_f26',_f26)\n  __dataclass_builtins_object__.__setattr__(self,'_f27',_f27)\n  __dataclass_builtins_object__.__setattr__(self,'_f28',_d28() if _f28 is _HAS_DEFAULT_FACTORY else _f28)\n  __dataclass_builtins_object__.__setattr__(self,'_f29',_f29)\n  __dataclass_builtins_object__.__setattr__(self,'_f30',_f30)\n  __dataclass_builtins_object__.__setattr__(self,'_f31',_f31)\n  __dataclass_builtins_object__.__setattr__(self,'_f32',_f32)\n return __init__", __create_fn__))
