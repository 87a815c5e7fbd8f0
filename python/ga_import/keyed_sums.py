"""Keyed sums as one-hot products, while a model and its loss are traced.

`scatter_add`, `index_add` and `scatter_reduce(reduce="sum")` sum values
into slots chosen by keys (a prompt group's rewards, a document's token
counts, an expert's load). torch-mlir lowers them to TMTensor's scatter,
which MLIR 22 does not have; written as products with a one-hot encoding of
the keys they lower to linalg, where ga-opt's analysis sees each slot as a
sum over the batch (a keyed batch-sum): computed for the whole batch before
the micro-batches when it does not depend on the parameters, accumulated
when it does and is used linearly. The one-hot tensor holds one element per
key and slot: fine for the group and document counts of a batch, not for a
vocabulary.
"""


def _scatter_add(torch, self, dim, index, src):
    """self + the sums of src's elements into the slots index names along
    dim (torch.scatter_add's semantics), or None where index's shape is not
    self's (other than along dim) and src's."""
    dim = dim % self.dim()
    if index.dim() != self.dim() or any(
            index.shape[d] != self.shape[d] for d in range(self.dim())
            if d != dim):
        return None
    if tuple(src.shape) != tuple(index.shape):
        if any(s < i for s, i in zip(src.shape, index.shape)):
            return None
        src = src[tuple(slice(0, n) for n in index.shape)]
    keys = torch.arange(self.shape[dim], device=index.device)
    onehot = (index.unsqueeze(-1) == keys).to(src.dtype)
    return self + (onehot * src.unsqueeze(-1)).sum(dim).movedim(-1, dim)


def _index_add(torch, self, dim, index, source, alpha=1):
    """self + alpha * the sums of source's slices along dim into the slots
    that the 1-D index names (torch.index_add's semantics)."""
    dim = dim % self.dim()
    if index.dim() != 1:
        return None
    keys = torch.arange(self.shape[dim], device=index.device)
    onehot = (index.unsqueeze(-1) == keys).to(source.dtype)
    sums = (source.movedim(dim, -1) @ onehot).movedim(-1, dim)
    return self + (sums if alpha == 1 else alpha * sums)


def keyed_sums_mode(torch):
    """A TorchFunctionMode under which the keyed sums are one-hot products
    (the in-place forms update their tensor with the product's result);
    any other use of these functions runs as it is."""
    Tensor = torch.Tensor
    out_of_place = {torch.scatter_add: "scatter", Tensor.scatter_add:
                    "scatter", torch.index_add: "index",
                    Tensor.index_add: "index", torch.scatter_reduce:
                    "reduce", Tensor.scatter_reduce: "reduce"}
    in_place = {Tensor.scatter_add_: "scatter", Tensor.index_add_: "index",
                Tensor.scatter_reduce_: "reduce"}

    def rewrite(kind, args, kwargs):
        names = {"scatter": ("self", "dim", "index", "src"),
                 "index": ("self", "dim", "index", "source", "alpha"),
                 "reduce": ("self", "dim", "index", "src", "reduce",
                            "include_self")}[kind]
        bound = dict(zip(names, args))
        bound.update(kwargs)
        if kind == "reduce":
            if bound.get("reduce") != "sum" or not bound.get(
                    "include_self", True):
                return None
            kind = "scatter"
        if kind == "scatter":
            return _scatter_add(torch, bound["self"], bound["dim"],
                                bound["index"], bound["src"])
        return _index_add(torch, bound["self"], bound["dim"],
                          bound["index"], bound["source"],
                          bound.get("alpha", 1))

    class KeyedSums(torch.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            kind = out_of_place.get(func) or in_place.get(func)
            if kind:
                result = rewrite(kind, args, kwargs)
                if result is not None:
                    if func in in_place:
                        return args[0].copy_(result)
                    return result
            return func(*args, **kwargs)

    return KeyedSums()
