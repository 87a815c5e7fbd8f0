"""PyTorch's semantics where an export of the forward pass loses them.

torch.export records what a model computes, not how PyTorch differentiates
it. Where PyTorch's backward has a rule of its own that the forward's
operations do not imply, the step that ga-opt differentiates would get
another gradient with no error. While the model and the loss are traced,
`PyTorchConventions` (a TorchFunctionMode) writes each such call as
operations whose derivative under ga-opt's autodiff is PyTorch's, with
the same forward value:

| PyTorch call | what PyTorch's backward does | written as |
|---|---|---|
| `F.embedding(padding_idx=p)` | no gradient into row p | the rows read at p stop their gradient |
| `F.embedding(scale_grad_by_freq=True)` | a row's gradient divided by its token's count in the call's input | `sg(e) + (e - sg(e)) / count` |
| `F.gelu(approximate="tanh")` | sqrt(2/pi) in the tanh form (torch-mlir's decomposition has 0.797724) | the formula, with sqrt(2/pi) |
| `amax`, `amin`, `max()`, `min()` (no dim) | split evenly among ties | `sg(m) + sum(ties (x - m)) / count` |
| `max(dim)`, `min(dim)` | all to the index returned | `sg(m) + (x - m) at the index` |
| `maximum`, `minimum`, `max(a, b)`, `min(a, b)` | half to each operand at a tie | selects with `(a + b) / 2` at ties |
| `clamp`, `clip`, `clamp_min`, `clamp_max`, `hardtanh`, `relu6` | zero at the bounds (strict) | `where(lo < x < hi, x, sg(clamp(x)))` |
| `leaky_relu`, `prelu` | the slope at 0 (torch-mlir's decomposition gives 1 + slope) | `where(x > 0, x, slope x)` |
| `elu`, `selu` | the negative branch at 0 | `where(x > 0, x, alpha expm1(x))` (times selu's scale) |
| `hardswish` | 0 at -3, 1 at 3 | `where(x <= -3, 0, where(x < 3, x (x + 3) / 6, x))` |
| `hardsigmoid` | zero at -3 and 3 | `where(-3 < x < 3, x/6 + 1/2, sg(clamp(...)))` |
| `linalg.vector_norm`, `norm`, `F.normalize` | zero at a zero norm (sqrt's NaN masked) | `where(s == 0, 0, sqrt(where(s == 0, 1, s)))` |
| `cumsum` | (torch-mlir makes tm_tensor.scan, which MLIR 22 lacks) | `sum_i x[i] [i <= j]` |
| `F.scaled_dot_product_attention` | (a fused kernel whose result's strides its decomposition does not keep: a later `view` fails; or tm_tensor.attention) | its math path: `softmax(q k^T * scale + mask) v` |

and refuses what it cannot express with its reason and the user's line
(`ConventionError`): a `torch.autograd.Function` (its backward is its own,
and PyTorch runs its forward without gradients), `F.embedding(max_norm=...)`
(which renormalizes the table in place), dropout that is on.

`abs` at 0 needs nothing here: ga-opt's rule for `math.absf` is sign(x)
with sign(0) = 0, PyTorch's.

`sg` is ga-import's `ga::stop_gradient` (`train.stop_gradient` in the step).
"""

import inspect
import math
import os

__all__ = ["ConventionError", "PyTorchConventions", "user_frame"]


class ConventionError(RuntimeError):
    """A PyTorch construct whose gradient ga-import cannot carry; the
    message names it, the user's line and what to do."""


# The largest k of torch.topk written as k passes of max(dim) (a router's
# top-k experts); a larger k is left to torch-mlir (a refusal: sort).
TOPK_MAX = 8

# Frames that are not the user's: PyTorch's, torch-mlir's, ga-import's own
# and the standard library's wrappers (transformers' files count as the
# user's model).
_NOT_USER = (os.sep + "torch" + os.sep, os.sep + "torch_mlir" + os.sep,
             os.sep + "ga_import" + os.sep, os.sep + "contextlib.py",
             os.sep + "functools.py")


def user_frame():
    """'file:line' of the innermost frame of the user's code, or ''."""
    frame = inspect.currentframe()
    while frame is not None:
        path = frame.f_code.co_filename
        if not path.startswith("<") and \
                not any(part in path for part in _NOT_USER):
            return f"{path}:{frame.f_lineno}"
        frame = frame.f_back
    return ""


def _bind(signature, args, kwargs):
    """The arguments of a call by name, by a Python signature."""
    return signature(*args, **(kwargs or {}))


def _unary_input(input, inplace=False):
    """The signature of an activation of one tensor (hardsigmoid, ...)."""
    return input


class PyTorchConventions:
    """A context manager: while it is active, the calls in the table above
    are written in PyTorch's conventions. `stop` is the stop-gradient
    function of the trace (it also records that one was used)."""

    def __init__(self, torch, stop, dropout="refuse"):
        self.torch = torch
        self.stop = stop
        self.dropout_mode = dropout
        self.rewritten = {}  # what was rewritten: {name: count}

    # -- the rewrites --------------------------------------------------------

    def _note(self, what):
        self.rewritten[what] = self.rewritten.get(what, 0) + 1

    def embedding(self, func, args, kwargs):
        torch = self.torch

        def sig(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
                scale_grad_by_freq=False, sparse=False):
            return input, weight, padding_idx, max_norm, scale_grad_by_freq
        ids, weight, pad, max_norm, by_freq = _bind(sig, args, kwargs)
        if max_norm is not None:
            raise ConventionError(
                f"nn.Embedding(max_norm={max_norm}) at {user_frame()}: it "
                "renormalizes the rows it reads in place during the forward "
                "pass, which a training step of ga-opt does not do; drop "
                "max_norm (or renormalize the table outside the step)")
        out = torch.nn.functional.embedding(ids, weight)
        if not weight.is_floating_point():
            return out
        if pad is not None:
            self._note("embedding padding_idx")
            if pad < 0:
                pad += weight.shape[0]
            out = torch.where((ids == pad).unsqueeze(-1), self.stop(out), out)
        if by_freq:
            self._note("embedding scale_grad_by_freq")
            vocab = torch.arange(weight.shape[0], device=ids.device)
            hits = (ids.reshape(-1, 1) == vocab).to(weight.dtype).sum(0)
            count = torch.nn.functional.embedding(ids, hits.unsqueeze(-1))
            held = self.stop(out)
            out = held + (out - held) / count
        return out

    def gelu(self, func, args, kwargs):
        torch = self.torch

        def sig(input, approximate="none"):
            return input, approximate
        x, approximate = _bind(sig, args, kwargs)
        if approximate != "tanh" or not x.is_floating_point():
            return func(*args, **(kwargs or {}))
        self._note("gelu tanh")
        inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)
        return 0.5 * x * (1.0 + torch.tanh(inner))

    def _dims(self, x, dim):
        if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
            return tuple(range(x.dim()))
        if isinstance(dim, int):
            dim = (dim,)
        return tuple(d % max(x.dim(), 1) for d in dim)

    def _shape(self, x, dims, keepdim):
        return tuple(1 if i in dims else s for i, s in enumerate(x.shape)) \
            if keepdim else tuple(s for i, s in enumerate(x.shape)
                                  if i not in dims)

    def _even(self, x, m, dims, chosen=None):
        """sg(m) + sum over the chosen elements of (x - m) / their count:
        the value m, the gradient split evenly among the chosen elements
        (default: those equal to m; max(dim) chooses the index it returns).
        m keeps its reduced dimensions."""
        torch = self.torch
        m = self.stop(m)
        finite = m.abs() < math.inf
        m0 = torch.where(finite, m, torch.zeros_like(m))
        chosen = x == m if chosen is None else chosen
        count = chosen.to(x.dtype).sum(dims, keepdim=True)
        part = torch.where(chosen & finite, x - m0, torch.zeros_like(x))
        return m + part.sum(dims, keepdim=True) / count

    def extremum(self, func, args, kwargs, largest):
        """amax/amin, and max/min in their three forms."""
        torch = self.torch
        kwargs = dict(kwargs or {})
        name = "max" if largest else "min"
        if kwargs.get("out") is not None:
            return func(*args, **kwargs)
        x = args[0] if args else kwargs.get("input")
        if not isinstance(x, torch.Tensor) or not x.is_floating_point():
            return func(*args, **kwargs)
        is_a = func in self._reductions
        rest = list(args[1:])
        other = rest[0] if rest else kwargs.get("other")
        if not is_a and isinstance(other, torch.Tensor):
            return self.pairwise(x, other, largest)
        if is_a:  # amax(input, dim=(), keepdim=False)
            def sig(input, dim=(), keepdim=False):
                return dim, keepdim
            dim, keepdim = _bind(sig, args, kwargs)
            dims = self._dims(x, dim)
            self._note(f"a{name} ties")
            m = func(x, dims, keepdim=True)
            return self._even(x, m, dims).reshape(
                self._shape(x, dims, keepdim))
        dim = rest[0] if rest else kwargs.get("dim")
        if dim is None:  # max(): the whole tensor, split evenly
            self._note(f"{name}() ties")
            dims = tuple(range(x.dim()))
            m = func(x)
            return self._even(x, m.reshape((1,) * x.dim()), dims).reshape(())
        keepdim = rest[1] if len(rest) > 1 else kwargs.get("keepdim", False)
        d = dim % max(x.dim(), 1)
        self._note(f"{name}(dim) ties")
        values, index = func(x, d, keepdim=True)
        shape = [1] * x.dim()
        shape[d] = x.shape[d]
        at = torch.arange(x.shape[d], device=x.device).reshape(shape) == index
        out = self._even(x, values, (d,), chosen=at)
        if not keepdim:
            out, index = out.squeeze(d), index.squeeze(d)
        result = torch.return_types.max if largest else torch.return_types.min
        return result((out, index))

    def pairwise(self, a, b, largest):
        """maximum/minimum with PyTorch's half-and-half at ties."""
        torch = self.torch
        if not (a.is_floating_point() and b.is_floating_point()):
            return torch.maximum(a, b) if largest else torch.minimum(a, b)
        self._note("maximum ties" if largest else "minimum ties")
        first, second = (a > b, a < b) if largest else (a < b, a > b)
        return torch.where(first, a, torch.where(second, b, (a + b) * 0.5))

    def maximum(self, func, args, kwargs, largest=True):
        def sig(input, other):
            return input, other
        a, b = _bind(sig, args, {k: v for k, v in (kwargs or {}).items()
                                 if k != "out"})
        if (kwargs or {}).get("out") is not None:
            return func(*args, **kwargs)
        return self.pairwise(a, b, largest)

    def clamp(self, func, args, kwargs, which=None):
        """clamp/clip/clamp_min/clamp_max: PyTorch passes the gradient only
        strictly inside the bounds."""
        torch = self.torch
        kwargs = dict(kwargs or {})
        if kwargs.get("out") is not None:
            return func(*args, **kwargs)
        if which == "min":
            def sig(input, min):
                return input, min, None
        elif which == "max":
            def sig(input, max):
                return input, None, max
        else:
            def sig(input, min=None, max=None):
                return input, min, max
        x, lo, hi = _bind(sig, args, kwargs)
        if not x.is_floating_point():
            return func(*args, **kwargs)
        self._note("clamp bounds")
        value = torch.clamp(x, lo, hi)
        inside = torch.ones_like(x, dtype=torch.bool)
        if lo is not None:
            inside = inside & (x > lo)
        if hi is not None:
            inside = inside & (x < hi)
        return torch.where(inside, x, self.stop(value))

    def _safe_norm(self, x, ord, dims, keepdim):
        """The ord-norm of x over dims with PyTorch's zero gradient at a
        zero norm."""
        torch = self.torch
        if ord in (math.inf, -math.inf):
            a = x.abs()
            m = (torch.amax if ord > 0 else torch.amin)(a, dims, keepdim=True)
            return self._even(a, m, dims).reshape(self._shape(x, dims,
                                                              keepdim))
        if ord == 2:
            s = (x * x).sum(dims, keepdim=keepdim)
        else:
            s = (x.abs() ** ord).sum(dims, keepdim=keepdim)
        zero = s == 0
        safe = torch.where(zero, torch.ones_like(s), s)
        root = torch.sqrt(safe) if ord == 2 else safe ** (1.0 / ord)
        return torch.where(zero, torch.zeros_like(s), root)

    def vector_norm(self, func, args, kwargs):
        def sig(input, ord=2, dim=None, keepdim=False, *, dtype=None,
                out=None):
            return input, ord, dim, keepdim, dtype, out
        x, ord, dim, keepdim, dtype, out = _bind(sig, args, kwargs)
        return self._norm(func, args, kwargs, x, ord, dim, keepdim, dtype,
                          out)

    def norm(self, func, args, kwargs):
        def sig(input, p="fro", dim=None, keepdim=False, out=None,
                dtype=None):
            return input, p, dim, keepdim, dtype, out
        x, p, dim, keepdim, dtype, out = _bind(sig, args, kwargs)
        if p == "fro":
            p = 2
        return self._norm(func, args, kwargs, x, p, dim, keepdim, dtype, out)

    def _norm(self, func, args, kwargs, x, ord, dim, keepdim, dtype, out):
        if (out is not None or isinstance(ord, str) or ord in (0, None)
                or not x.is_floating_point() or not ord > 0 and
                ord != -math.inf):
            return func(*args, **(kwargs or {}))
        if dtype is not None:
            x = x.to(dtype)
        self._note("norm at zero")
        return self._safe_norm(x, float(ord), self._dims(x, dim), keepdim)

    def normalize(self, func, args, kwargs):
        def sig(input, p=2.0, dim=1, eps=1e-12, out=None):
            return input, p, dim, eps, out
        x, p, dim, eps, out = _bind(sig, args, kwargs)
        if out is not None or not x.is_floating_point() or not p > 0:
            return func(*args, **(kwargs or {}))
        self._note("norm at zero")
        n = self._safe_norm(x, float(p), self._dims(x, dim), True)
        torch = self.torch
        held = self.stop(torch.clamp(n, min=eps))
        denom = torch.where(n > eps, n, held)
        return x / denom.expand_as(x)

    def leaky_relu(self, func, args, kwargs):
        """PyTorch's slope at 0 (torch-mlir's decomposition gives 1 + slope
        there): where(x > 0, x, slope x)."""
        torch = self.torch

        def sig(input, negative_slope=0.01, inplace=False):
            return input, negative_slope
        x, slope = _bind(sig, args, kwargs)
        if not x.is_floating_point():
            return func(*args, **(kwargs or {}))
        self._note("leaky_relu at 0")
        return torch.where(x > 0, x, x * slope)

    def prelu(self, func, args, kwargs):
        """As leaky_relu, with the slope a parameter (per channel, dim 1)."""
        torch = self.torch

        def sig(input, weight):
            return input, weight
        x, w = _bind(sig, args, kwargs)
        if not x.is_floating_point():
            return func(*args, **(kwargs or {}))
        self._note("prelu at 0")
        if w.numel() > 1 and x.dim() >= 2:
            w = w.reshape([1, w.numel()] + [1] * (x.dim() - 2))
        return torch.where(x > 0, x, x * w)

    def hardtanh(self, func, args, kwargs, bounds=None):
        """hardtanh/relu6: zero gradient at the bounds, as clamp."""
        torch = self.torch
        if bounds is None:
            def sig(input, min_val=-1.0, max_val=1.0, inplace=False):
                return input, min_val, max_val
            x, lo, hi = _bind(sig, args, kwargs)
        else:
            x, (lo, hi) = _bind(_unary_input, args, kwargs), bounds
        if not x.is_floating_point():
            return func(*args, **(kwargs or {}))
        self._note("clamp bounds")
        inside = (x > lo) & (x < hi)
        return torch.where(inside, x, self.stop(torch.clamp(x, lo, hi)))

    def elu(self, func, args, kwargs, selu=False):
        """elu/selu as PyTorch differentiates them: the negative branch
        from 0 down (alpha at 0), the identity above."""
        torch = self.torch
        if selu:
            def sig(input, inplace=False):
                return input, 1.6732632423543772848170429916717, \
                    1.0507009873554804934193349852946
        else:
            def sig(input, alpha=1.0, inplace=False):
                return input, alpha, 1.0
        x, alpha, scale = _bind(sig, args, kwargs)
        if not x.is_floating_point():
            return func(*args, **(kwargs or {}))
        self._note("elu at 0")
        negative = alpha * torch.expm1(x)
        out = torch.where(x > 0, x, negative)
        return out * scale if selu else out

    def hardsigmoid(self, func, args, kwargs):
        """relu6(x + 3) / 6 with PyTorch's zero gradient at -3 and 3."""
        torch = self.torch
        x = _bind(_unary_input, args, kwargs)
        if not x.is_floating_point():
            return func(*args, **(kwargs or {}))
        self._note("hardsigmoid bounds")
        linear = x / 6.0 + 0.5
        inside = (x > -3.0) & (x < 3.0)
        return torch.where(inside, linear,
                           self.stop(torch.clamp(linear, 0.0, 1.0)))

    def hardswish(self, func, args, kwargs):
        """x relu6(x + 3) / 6 with PyTorch's gradient: 0 up to -3, x/3 + 1/2
        strictly between, 1 from 3 up."""
        torch = self.torch
        x = _bind(_unary_input, args, kwargs)
        if not x.is_floating_point():
            return func(*args, **(kwargs or {}))
        self._note("hardswish bounds")
        middle = x * (x + 3.0) / 6.0
        return torch.where(x <= -3.0, torch.zeros_like(x),
                           torch.where(x < 3.0, middle, x))

    def cumsum(self, func, args, kwargs):
        """torch.cumsum as a masked sum over the positions up to each one
        (torch-mlir lowers a running sum to tm_tensor.scan, which MLIR 22
        does not have): out[..., j] = sum_i x[..., i] [i <= j]. The same
        values (integers exactly; floats summed in another order) and the
        same gradient. Transformers' OPT, RoBERTa, BLOOM and Falcon build
        position ids or ALiBi biases this way from the attention mask."""
        torch = self.torch

        def sig(input, dim, *, dtype=None, out=None):
            return input, dim, dtype, out
        x, dim, dtype, out = _bind(sig, args, kwargs)
        if out is not None or x.dim() == 0:
            return func(*args, **(kwargs or {}))
        if dtype is not None:
            x = x.to(dtype)
        elif x.dtype == torch.bool or not (x.is_floating_point() or
                                           x.dtype == torch.int64):
            x = x.to(torch.int64)  # PyTorch's running sum of integers
        self._note("cumsum")
        d = dim % x.dim()
        n = x.shape[d]
        moved = x.movedim(d, -1)
        positions = torch.arange(n, device=x.device)
        upto = (positions.unsqueeze(1) <= positions.unsqueeze(0)).to(x.dtype)
        summed = (moved.unsqueeze(-1) * upto).sum(-2)
        return summed.movedim(-1, d)

    def topk(self, func, args, kwargs):
        """torch.topk for k <= TOPK_MAX as k passes of max(dim), each taking
        the first extreme of what is left (torch-mlir lowers topk to
        tm_tensor.sort, which MLIR 22 does not have): the same values and
        indices (in descending order, ties to the first index; PyTorch's
        order among ties is unspecified), each value's gradient to its
        index. A mixture of experts' router (transformers' Mixtral,
        Qwen-MoE) takes its top-k experts so."""
        torch = self.torch

        def sig(input, k, dim=-1, largest=True, sorted=True, *, out=None):
            return input, k, dim, largest, out
        x, k, dim, largest, out = _bind(sig, args, kwargs)
        if out is not None or not isinstance(k, int) or k > TOPK_MAX or \
                x.dim() == 0 or not x.is_floating_point():
            return func(*args, **(kwargs or {}))
        self._note("topk")
        d = dim % x.dim()
        shape = [1] * x.dim()
        shape[d] = x.shape[d]
        positions = torch.arange(x.shape[d], device=x.device).reshape(shape)
        left = x.detach()
        fill = -math.inf if largest else math.inf
        values, indices = [], []
        for _ in range(k):
            m, index = (torch.max if largest else torch.min)(left, d,
                                                             keepdim=True)
            at = positions == index
            values.append(self._even(x, m, (d,), chosen=at))
            indices.append(index)
            left = torch.where(at, torch.full_like(left, fill), left)
        return torch.return_types.topk((torch.cat(values, d),
                                        torch.cat(indices, d)))

    def attention(self, func, args, kwargs):
        """F.scaled_dot_product_attention as its math path (PyTorch's
        reference formula), so that the export never holds the fused
        kernel."""
        torch = self.torch

        def sig(query, key, value, attn_mask=None, dropout_p=0.0,
                is_causal=False, scale=None, enable_gqa=False):
            return (query, key, value, attn_mask, dropout_p, is_causal, scale,
                    enable_gqa)
        q, k, v, mask, p, causal, scale, gqa = _bind(sig, args, kwargs)
        if p > 0:
            if self.dropout_mode != "off":
                raise ConventionError(
                    f"scaled_dot_product_attention with dropout_p = {p} at "
                    f"{user_frame()}: a step that ga-opt splits bit for bit "
                    "draws no random numbers; put the model in eval() mode "
                    "for the import, or pass dropout='off' for the step "
                    "without dropout")
        self._note("scaled_dot_product_attention")
        if gqa and k.dim() >= 3 and k.shape[-3] != q.shape[-3]:
            repeat = q.shape[-3] // k.shape[-3]
            k = k.repeat_interleave(repeat, dim=-3)
            v = v.repeat_interleave(repeat, dim=-3)
        if scale is None:
            scale = 1.0 / math.sqrt(q.shape[-1])
        scores = torch.matmul(q, k.transpose(-2, -1)) * scale
        rows, cols = q.shape[-2], k.shape[-2]
        if causal:
            keep = torch.ones(rows, cols, dtype=torch.bool,
                              device=q.device).tril()
            scores = scores.masked_fill(~keep, -math.inf)
        if mask is not None:
            if mask.dtype == torch.bool:
                scores = scores.masked_fill(~mask, -math.inf)
            else:
                scores = scores + mask
        return torch.matmul(torch.softmax(scores, dim=-1), v)

    def dropout(self, func, args, kwargs):
        def sig(input, p=0.5, training=True, inplace=False):
            return p, training
        p, training = _bind(sig, args, kwargs)
        if training and p > 0 and self.dropout_mode == "off":
            return args[0] if args else kwargs["input"]
        if training and p > 0:
            raise ConventionError(
                f"dropout with p = {p} in training mode at {user_frame()}: "
                "a step that ga-opt splits bit for bit draws no random "
                "numbers; put the model in eval() mode for the import, set "
                "the dropout probability to 0, or pass dropout='off' for the "
                "step without dropout")
        return func(*args, **(kwargs or {}))

    # -- the mode ------------------------------------------------------------

    def __enter__(self):
        torch = self.torch
        F = torch.nn.functional
        T = torch.Tensor
        self._reductions = {torch.amax, torch.amin, T.amax, T.amin}
        table = {F.embedding: self.embedding, F.gelu: self.gelu}
        for f in (torch.amax, T.amax, torch.max, T.max):
            table[f] = lambda fn, a, k: self.extremum(fn, a, k, True)
        for f in (torch.amin, T.amin, torch.min, T.min):
            table[f] = lambda fn, a, k: self.extremum(fn, a, k, False)
        for f in (torch.maximum, T.maximum):
            table[f] = lambda fn, a, k: self.maximum(fn, a, k, True)
        for f in (torch.minimum, T.minimum):
            table[f] = lambda fn, a, k: self.maximum(fn, a, k, False)
        for f in (torch.clamp, T.clamp, torch.clip, T.clip):
            table[f] = self.clamp
        for f in (torch.clamp_min, T.clamp_min):
            table[f] = lambda fn, a, k: self.clamp(fn, a, k, "min")
        for f in (torch.clamp_max, T.clamp_max):
            table[f] = lambda fn, a, k: self.clamp(fn, a, k, "max")
        table[torch.linalg.vector_norm] = self.vector_norm
        for f in (torch.norm, T.norm):
            table[f] = self.norm
        table[F.normalize] = self.normalize
        for f in (torch.cumsum, T.cumsum):
            table[f] = self.cumsum
        for f in (torch.topk, T.topk):
            table[f] = self.topk
        table[F.leaky_relu] = self.leaky_relu
        table[F.elu] = self.elu
        table[F.selu] = lambda fn, a, k: self.elu(fn, a, k, selu=True)
        table[F.hardsigmoid] = self.hardsigmoid
        table[F.hardswish] = self.hardswish
        table[F.prelu] = self.prelu
        table[F.hardtanh] = self.hardtanh
        table[F.relu6] = lambda fn, a, k: self.hardtanh(fn, a, k, (0.0, 6.0))
        dropouts = (F.dropout, F.dropout1d, F.dropout2d, F.dropout3d,
                    F.alpha_dropout, F.feature_alpha_dropout)
        for f in dropouts:
            table[f] = self.dropout
        table[F.scaled_dot_product_attention] = self.attention
        # Not a gradient's convention: also where gradients are off.
        always = {torch.cumsum, T.cumsum, torch.topk, T.topk, *dropouts,
                  F.scaled_dot_product_attention}

        class Mode(torch.overrides.TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                rewrite = table.get(func)
                if rewrite is None or (func not in always and
                                       not torch.is_grad_enabled()):
                    return func(*args, **(kwargs or {}))
                return rewrite(func, args, kwargs)

        # The classmethod itself, to put back as it was.
        self._function_apply = vars(torch.autograd.Function)["apply"]
        original = self._function_apply
        # While a Function is applied where gradients are off (its gradient
        # does not matter), its forward runs as it is.
        passing = []

        def refuse(cls):
            try:
                source = inspect.getsourcefile(cls)
                line = inspect.getsourcelines(cls)[1]
                defined = f" (defined at {source}:{line})"
            except (OSError, TypeError):
                defined = ""
            raise ConventionError(
                f"torch.autograd.Function {cls.__qualname__}{defined} is "
                f"applied at {user_frame()}: its backward is its own and "
                "PyTorch runs its forward without gradients, so the step "
                "would not compute its gradient; write it with torch "
                "operations (whose gradient ga-opt derives), or keep it "
                "out of the step")

        def apply(cls, *args, **kwargs):
            if torch.is_grad_enabled():
                refuse(cls)
            passing.append(cls)
            try:
                return original.__get__(None, cls)(*args, **kwargs)
            finally:
                passing.pop()

        torch.autograd.Function.apply = classmethod(apply)
        # `MyFunction.apply` taken before the trace (`gelu = GeLU.apply` at
        # a module's top) skips the patched apply: the Functions' own
        # forwards refuse then (those of torch's own modules are left).
        self._forwards = {}

        def subclasses(cls):
            for c in cls.__subclasses__():
                yield c
                yield from subclasses(c)

        def guarded(cls, forward):
            def run(*args, **kwargs):
                if not passing or passing[-1] is not cls:
                    refuse(cls)
                return forward(*args, **kwargs)
            return staticmethod(run)

        for cls in set(subclasses(torch.autograd.Function)):
            forward = vars(cls).get("forward")
            if (cls.__module__ or "").startswith("torch") or \
                    not isinstance(forward, staticmethod):
                continue
            self._forwards[cls] = forward
            cls.forward = guarded(cls, forward.__func__)
        self.mode = Mode()
        try:
            self.mode.__enter__()
        except BaseException:
            self._restore()
            raise
        return self

    def _restore(self):
        self.torch.autograd.Function.apply = self._function_apply
        for cls, forward in self._forwards.items():
            cls.forward = forward

    def __exit__(self, *exc):
        try:
            self.mode.__exit__(*exc)
        finally:
            self._restore()
        return False
