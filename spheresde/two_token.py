"""Two tokens: ``spheresde.two_token`` is :mod:`spheresde.transformer.two_token`.

The two-token theory is part of the model, so it lives in :mod:`spheresde.transformer`;
this name makes ``import spheresde.two_token`` the same module object, not a copy.
"""

import sys

from .transformer import two_token as _two_token

sys.modules[__name__] = _two_token
