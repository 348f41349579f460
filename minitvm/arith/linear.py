"""Linear form of integer expressions: ``c1 * t1 + c2 * t2 + ... + constant``.

Schedules produce index expressions such as ``(i0 * 4 + i1) * 128 + j * 1 + 0``.  Writing
them as a list of (term, coefficient) pairs plus a constant makes like terms easy to
collect and constants easy to fold; :meth:`LinearSum.to_expr` turns the list back into
an expression that reads like hand-written code (``i0 * 512 + i1 * 128 + j``).

Terms keep the order in which they first appear, so the simplified expression keeps the
order the programmer (or the schedule) wrote.
"""

from __future__ import annotations

from typing import Any, Iterator

from ..ir.node import Node
from ..ir.structural import equal_without_definitions, structural_equal
from ..tir.expr import Add, FloorDiv, FloorMod, IntImm, Mul, PrimExpr, Sub

__all__ = ["LinearSum", "same_expr"]


def same_expr(a: PrimExpr, b: PrimExpr) -> bool:
    """Same expression, with the very same variables (no renaming allowed)."""
    if a is b:
        return True
    # what structural_equal would answer first, without its set-up (asked for every pair of
    # terms): nodes of different kinds differ, and two variables differ unless they are one
    if isinstance(a, Node) and (type(a) is not type(b) or a._binds):
        return False
    plain = equal_without_definitions(a, b)
    return structural_equal(a, b) if plain is None else plain


class LinearSum:
    """``sum(coeff * term) + constant`` over integers of one dtype."""

    def __init__(self, dtype: str, terms: list[tuple[PrimExpr, int]] | None = None, constant: int = 0):
        self.dtype = dtype
        self.terms: list[tuple[PrimExpr, int]] = []
        self.constant = constant
        for term, coeff in terms or ():
            self.add_term(term, coeff)

    # -- building -----------------------------------------------------------------
    @staticmethod
    def from_expr(e: PrimExpr) -> "LinearSum":
        """Expand additions, subtractions and multiplications by constants."""
        out = LinearSum(e.dtype)
        out._accumulate(e, 1)
        return out

    def _accumulate(self, e: PrimExpr, scale: int) -> None:
        if isinstance(e, IntImm):
            self.constant += scale * e.value
        elif isinstance(e, Add):
            self._accumulate(e.a, scale)
            self._accumulate(e.b, scale)
        elif isinstance(e, Sub):
            self._accumulate(e.a, scale)
            self._accumulate(e.b, -scale)
        elif isinstance(e, Mul) and isinstance(e.b, IntImm):
            self._accumulate(e.a, scale * e.b.value)
        elif isinstance(e, Mul) and isinstance(e.a, IntImm):
            self._accumulate(e.b, scale * e.a.value)
        else:
            self.add_term(e, scale)

    def add_term(self, term: PrimExpr, coeff: int) -> None:
        for k, (existing, c) in enumerate(self.terms):
            if same_expr(existing, term):
                if c + coeff == 0:
                    del self.terms[k]
                else:
                    self.terms[k] = (existing, c + coeff)
                return
        if coeff != 0:
            self.terms.append((term, coeff))

    def split_by(self, divisor: int) -> tuple["LinearSum", "LinearSum"]:
        """``self == divisor * scaled + residue``: terms whose coefficient ``divisor``
        divides go to ``scaled`` (divided), the others stay in ``residue``; the constant
        is split by floor division so ``residue.constant`` is in ``[0, divisor)``."""
        scaled = LinearSum(self.dtype, constant=self.constant // divisor)
        residue = LinearSum(self.dtype, constant=self.constant % divisor)
        for term, coeff in self.terms:
            if coeff % divisor == 0:
                scaled.terms.append((term, coeff // divisor))
            else:
                residue.terms.append((term, coeff))
        return scaled, residue

    def fold_div_mod_pairs(self) -> None:
        """Use floor division's defining identity, ``x // c * c + x % c == x``, scaled:
        ``(x // c) * (c * k) + (x % c) * k`` becomes ``x * k`` (fused-then-flattened
        indices turn back into the loop variable they came from)."""
        self._fold_pairs(self._find_div_mod_pair, lambda x, k: self._accumulate(x, k))

    def fold_div_self_pairs(self) -> None:
        """The same identity read the other way: ``(x // c) * (c * k) - x * k`` becomes
        ``-(x % c) * k``, whose bounds are known, for ``x`` itself linear (``(n + 7) // 8 * 8 - n``
        is ``7 - (n + 7) % 8``: the whole tiles of a symbolic row count stay inside it)."""
        while True:
            found = self._find_div_self_pair()
            if found is None:
                return
            div_position, positions, mod, k, shift = found
            old_terms, self.terms = self.terms, []
            for position, (term, coeff) in enumerate(old_terms):
                if position == div_position:
                    self.add_term(mod, -k)
                elif position not in positions:
                    self.add_term(term, coeff)
            self.constant += shift

    def _fold_pairs(self, find, put) -> None:
        """Replace each pair of terms ``find`` returns (positions, what, k) by ``put(what, k)``,
        in the place of the first of them (reading order kept)."""
        while True:
            pair = find()
            if pair is None:
                return
            first, second, what, k = pair
            old_terms, self.terms = self.terms, []
            for position, (term, coeff) in enumerate(old_terms):
                if position == first:
                    put(what, k)
                elif position != second:
                    self.add_term(term, coeff)

    def _scaled_divisions(self) -> Iterator[tuple[int, FloorDiv, int]]:
        """Each term ``x // c`` (c a positive constant) whose coefficient is ``c * k``: (position, term, k)."""
        for position, (div, coeff) in enumerate(self.terms):
            if isinstance(div, FloorDiv) and isinstance(div.b, IntImm) and div.b.value > 0 \
                    and coeff % div.b.value == 0:
                yield position, div, coeff // div.b.value

    def _find_div_self_pair(self) -> tuple[int, set[int], PrimExpr, int, int] | None:
        """A term ``x // c`` of coefficient ``c * k`` and, for each term of ``x``'s linear form,
        that term with ``-k`` times its coefficient: (position, those positions, ``x % c``, k,
        what the constant gains, ``k`` times ``x``'s constant)."""
        for div_position, div, k in self._scaled_divisions():
            inner = LinearSum.from_expr(div.a)
            positions: set[int] = set()
            for term, coeff in inner.terms:
                position = next((p for p, (t, c) in enumerate(self.terms)
                                 if p != div_position and c == -k * coeff and same_expr(t, term)), None)
                if position is None:
                    break
                positions.add(position)
            else:
                if inner.terms:
                    return div_position, positions, FloorMod(div.a, div.b), k, k * inner.constant
        return None

    def _find_div_mod_pair(self) -> tuple[int, int, PrimExpr, int] | None:
        """A term ``x // c`` of coefficient ``c * k`` and a term ``y % c`` of coefficient ``k``
        with ``y`` congruent to ``x`` modulo ``c`` (so ``y % c == x % c``): (positions, x, k).
        Congruent, not only equal, because flattening a reshape writes each index from its
        own simplified form: ``(x % 169) // 13 * 13 + x % 13`` is ``x % 169``."""
        for div_position, div, k in self._scaled_divisions():
            for mod_position, (mod, mod_coeff) in enumerate(self.terms):
                if (isinstance(mod, FloorMod) and mod_coeff == k and same_expr(mod.b, div.b)
                        and _congruent(mod.a, div.a, div.b.value)):
                    return div_position, mod_position, div.a, k
        return None

    @property
    def is_constant(self) -> bool:
        return not self.terms

    # -- back to an expression ---------------------------------------------------------
    def to_expr(self) -> PrimExpr:
        """Rebuild as readable TIR: positive terms first, ``- t`` for negative ones,
        the constant last (``i * 4 + j - 1``)."""
        if not self.terms:
            return IntImm(self.dtype, self.constant)
        first, steps = self._reading_order()
        result = self._operand(first)
        for op, operand in steps:
            result = op(result, self._operand(operand))
        return result

    def builds(self, e: PrimExpr) -> bool:
        """Whether :meth:`to_expr` would build an expression structurally equal to ``e`` from
        these very terms (identity) -- an already simplified index then need not be rebuilt
        and compared (False when unsure)."""
        if not self.terms:
            return self._is_operand(e, self.constant)
        first, steps = self._reading_order()
        for op, operand in reversed(steps):
            if type(e) is not op or not self._is_operand(e.b, operand):
                return False
            e = e.a
        return self._is_operand(e, first)

    def _reading_order(self) -> tuple:
        """:meth:`to_expr`'s expression as its first operand and the ``(Add or Sub, operand)``
        applied to it in turn; an operand is ``(term, coeff)`` or an int constant."""
        positive = [(t, c) for t, c in self.terms if c > 0]
        negative = [(t, -c) for t, c in self.terms if c < 0]
        if positive:
            first, steps = positive[0], [(Add, x) for x in positive[1:]]
        elif self.constant > 0:
            # only subtractions: start from the constant (``16 - i``)
            return self.constant, [(Sub, x) for x in negative]
        else:
            (term, coeff), negative, steps = negative[0], negative[1:], []
            first = (term, -coeff)
        steps += [(Sub, x) for x in negative]
        if self.constant > 0:
            steps.append((Add, self.constant))
        elif self.constant < 0:
            steps.append((Sub, -self.constant))
        return first, steps

    def _operand(self, operand: Any) -> PrimExpr:
        if isinstance(operand, int):
            return IntImm(self.dtype, operand)
        term, coeff = operand
        return term if coeff == 1 else Mul(term, IntImm(self.dtype, coeff))

    def _is_operand(self, e: PrimExpr, operand: Any) -> bool:
        if isinstance(operand, int):
            return type(e) is IntImm and e.dtype == self.dtype and e.value == operand
        term, coeff = operand
        if coeff == 1:
            return e is term
        return (type(e) is Mul and e.a is term and type(e.b) is IntImm and e.b.dtype == self.dtype
                and e.b.value == coeff)

    def __repr__(self) -> str:
        terms = " + ".join(f"{c}*{t!r}" for t, c in self.terms)
        return f"LinearSum({terms} + {self.constant})"


def _residue_source(e: PrimExpr, c: int) -> PrimExpr:
    """``e`` without outer ``% m`` whose ``m`` is a multiple of ``c``: taking them does not
    change the residue modulo ``c``."""
    while isinstance(e, FloorMod) and isinstance(e.b, IntImm) and e.b.value > 0 and e.b.value % c == 0:
        e = e.a
    return e


def _congruent(a: PrimExpr, b: PrimExpr, c: int) -> bool:
    """``a`` and ``b`` are provably congruent modulo ``c``: their difference, as a linear form,
    is ``c`` times an integer.  A term ``t * k`` beside ``(t % d) * -k`` is ``(t // d) * (d * k)``
    there (a loop variable beside its own remainder, as fused loops leave them)."""
    if same_expr(a, b):
        return True
    difference = LinearSum.from_expr(Sub(_residue_source(a, c), _residue_source(b, c)))
    terms = difference.terms
    paired: set[int] = set()
    for position, (term, coeff) in enumerate(terms):
        if position not in paired and isinstance(term, FloorMod) and isinstance(term.b, IntImm) \
                and term.b.value > 0:
            whole = next((p for p, (t, k) in enumerate(terms)
                          if p not in paired and k == -coeff and same_expr(t, term.a)), None)
            if whole is not None and (coeff * term.b.value) % c == 0:  # t*k - (t % d)*k == (t // d)*(d*k)
                paired.update((position, whole))
    return difference.constant % c == 0 and all(
        coeff % c == 0 for position, (_, coeff) in enumerate(terms) if position not in paired)
