"""The statements of source code in languages other than Python, through tree-sitter.

`parse` turns a text into `Stmt` objects shaped like the statements of Python's ``ast``
(``lineno``, ``col_offset``, ``end_lineno``, ``end_col_offset``, ``decorator_list``,
``name``), each with a ``kind``: ``"def"`` (a function, method or constructor),
``"class"`` (a class, struct, impl, interface, trait, enum, module or namespace: cut by
its members), ``"import"`` (an import, include or use line) or ``"other"``. ``kids`` are
the statements or members directly inside, found when first asked for. code.py packs
them exactly as it packs Python's statements.

The grammars ship inside their wheels (one small wheel per language), so code is cut
with no network; tree-sitter and a grammar are imported only when such a file is cut.
Lines and columns are counted from the bytes, with code.py's line breaks, not from
tree-sitter's rows, so a lone CR counts the same in both.
"""

from __future__ import annotations

import importlib
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Any

# Language name -> (module, function returning the grammar).
GRAMMARS: dict[str, tuple[str, str]] = {
    "javascript": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx"),
    "go": ("tree_sitter_go", "language"),
    "rust": ("tree_sitter_rust", "language"),
    "java": ("tree_sitter_java", "language"),
    "c": ("tree_sitter_c", "language"),
    "cpp": ("tree_sitter_cpp", "language"),
    "csharp": ("tree_sitter_c_sharp", "language"),
    "ruby": ("tree_sitter_ruby", "language"),
    "php": ("tree_sitter_php", "language_php"),
    "kotlin": ("tree_sitter_kotlin", "language"),
    "swift": ("tree_sitter_swift", "language"),
    "bash": ("tree_sitter_bash", "language"),
}

# Node types by what they are, over all the grammars (the names rarely clash, and where
# they do they mean the same thing).
_DEFS = frozenset(
    {
        "function_declaration",
        "generator_function_declaration",
        "method_definition",
        "method_declaration",
        "function_item",
        "constructor_declaration",
        "compact_constructor_declaration",
        "destructor_declaration",
        "operator_declaration",
        "conversion_operator_declaration",
        "local_function_statement",
        "function_definition",
        "method",
        "singleton_method",
        "secondary_constructor",
        "init_declaration",
        "deinit_declaration",
        "subscript_declaration",
    }
)
_CLASSES = frozenset(
    {
        "class_declaration",
        "abstract_class_declaration",
        "class",
        "interface_declaration",
        "enum_declaration",
        "internal_module",
        "module",
        "impl_item",
        "trait_item",
        "struct_item",
        "enum_item",
        "union_item",
        "type_declaration",
        "mod_item",
        "record_declaration",
        "annotation_type_declaration",
        "class_specifier",
        "struct_specifier",
        "namespace_definition",
        "struct_declaration",
        "namespace_declaration",
        "file_scoped_namespace_declaration",
        "singleton_class",
        "trait_declaration",
        "object_declaration",
        "companion_object",
        "protocol_declaration",
    }
)
_IMPORTS = frozenset(
    {
        "import_statement",
        "import_declaration",
        "use_declaration",
        "extern_crate_declaration",
        "preproc_include",
        "using_directive",
        "namespace_use_declaration",
        "import",
        "import_list",
        "import_header",
    }
)
# A declaration wrapped in another node: ``export``, ``declare``, ``template <...>``.
_WRAPPERS = frozenset(
    {
        "export_statement",
        "ambient_declaration",
        "template_declaration",
        "declaration",
        "expression_statement",  # TypeScript's `namespace NS {...}`
    }
)
# Conditional compilation around declarations: cut by what is inside, like Python's
# ``if TYPE_CHECKING:``.
_PREPROC = frozenset({"preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif"})
# The node that holds a body's statements or a class's members.
_BODIES = frozenset(
    {
        "class_body",
        "declaration_list",
        "field_declaration_list",
        "enum_body",
        "enum_member_declaration_list",
        "interface_body",
        "protocol_body",
        "enum_class_body",
        "object_type",
        "block",
        "statement_block",
        "compound_statement",
        "statement_list",
        "body_statement",
        "function_body",
        "constructor_body",
        "do_group",
        "statements",
        "switch_body",
        "annotation_type_body",
    }
)
# Variable declarations whose value is a function: ``const f = () => {...}``.
_VARIABLES = frozenset({"lexical_declaration", "variable_declaration"})
_FUNCTION_VALUES = frozenset(
    {"arrow_function", "function_expression", "function", "generator_function"}
)
_NAMES = frozenset(
    {
        "identifier",
        "type_identifier",
        "field_identifier",
        "property_identifier",
        "simple_identifier",
        "constant",
        "name",
        "word",
        "qualified_identifier",
        "scoped_identifier",
        "scope_resolution",
        "destructor_name",
        "operator_name",
        "namespace_identifier",
        "user_type",
        "private_property_identifier",
    }
)
# Rust's ``#[derive(...)]`` lines are nodes of their own, before what they annotate.
_ATTRIBUTES = frozenset({"attribute_item"})
_SPACE = b" \t\n\r\x0b\x0c"

_languages: dict[str, Any] = {}


def available(language: str) -> bool:
    """Whether ``language`` has a grammar here."""
    return _language(language) is not None


def _language(language: str) -> Any | None:
    if language not in _languages:
        found = None
        spec = GRAMMARS.get(language)
        if spec is not None:
            try:
                import tree_sitter

                module = importlib.import_module(spec[0])
                found = tree_sitter.Language(getattr(module, spec[1])())
            except (ImportError, AttributeError, ValueError):
                found = None
        _languages[language] = found
    return _languages[language]


@dataclass(slots=True, eq=False)
class Stmt:
    """A statement, shaped as code.py reads Python's (lines 1-based, columns in bytes)."""

    kind: str
    name: str | None
    lineno: int
    col_offset: int
    end_lineno: int
    end_col_offset: int
    decorator_list: list[Stmt]
    node: Any = field(repr=False)
    source: _Reader = field(repr=False)
    _kids: list[Stmt] | None = field(default=None, repr=False)

    @property
    def kids(self) -> list[Stmt]:
        """The statements (or members) directly inside, in order."""
        if self._kids is None:
            self._kids = self.source.kids(self)
        return self._kids


class Tree:
    """A parsed text: its top-level statements, and the lines that are only comments
    (more are found as the statements inside are asked for)."""

    def __init__(self, data: bytes, starts: list[int], bom: int, root: Any) -> None:
        reader = _Reader(data, starts, bom)
        self.comment_lines = reader.comment_lines
        self.body = reader.statements(root.children)


class _Reader:
    """Makes statements of nodes. The statements point to it and it to none of them:
    no reference cycle, so a cut's tree is freed as soon as it is made."""

    def __init__(self, data: bytes, starts: list[int], bom: int) -> None:
        self.data = data
        self.starts = starts
        self.bom = bom
        self.comment_lines: set[int] = set()

    # ------------------------------------------------------------ statements

    def statements(self, nodes: list[Any]) -> list[Stmt]:
        """The named nodes as statements; comments are noted by their lines, Rust's
        attributes go with what follows them."""
        out: list[Stmt] = []
        attributes: list[Stmt] = []
        for node in nodes:
            if not node.is_named or node.is_missing:
                continue
            kind = node.type
            if "comment" in kind:
                self._comment(node)
                continue
            stmt = self._stmt(node)
            if stmt is None:
                continue
            if kind in _ATTRIBUTES:
                attributes.append(stmt)
                continue
            if attributes:
                stmt.decorator_list = attributes
                attributes = []
            out.append(stmt)
        out.extend(attributes)
        return _joined(out)

    def _stmt(self, node: Any) -> Stmt | None:
        start, end = node.start_byte + self.bom, node.end_byte + self.bom
        data = self.data
        while end > start and data[end - 1] in _SPACE:
            end -= 1
        if start >= end:
            return None
        kind, name = _what(node)
        lineno = bisect_right(self.starts, start)
        end_lineno = bisect_right(self.starts, end - 1)
        return Stmt(
            kind,
            name,
            lineno,
            start - self.starts[lineno - 1] - (self.bom if lineno == 1 else 0),
            end_lineno,
            end - self.starts[end_lineno - 1] - (self.bom if end_lineno == 1 else 0),
            [],
            node,
            self,
        )

    def kids(self, stmt: Stmt) -> list[Stmt]:
        node = stmt.node
        if node.type in _PREPROC or _inner(node).type in _PREPROC:
            return self.statements(_preproc_items(_inner(node)))
        body = _body(node)
        if body is None:
            return []
        kids = self.statements(body.children)
        return [kid for kid in kids if kid.node.start_byte >= body.start_byte]

    def _comment(self, node: Any) -> None:
        """A comment's lines, where nothing but indentation comes before it."""
        start = node.start_byte + self.bom
        first = bisect_right(self.starts, start)
        if self.data[self.starts[first - 1] : start].strip(b" \t\x0c"):
            return
        last = bisect_right(self.starts, max(start, node.end_byte + self.bom - 1))
        self.comment_lines.update(range(first, last + 1))


def _joined(stmts: list[Stmt]) -> list[Stmt]:
    """Where a macro misleads the grammar, a def or class comes in pieces on its first and
    last lines: ``static MACRO inline`` before ``int f(void) {``, a ``;`` after its ``}``.
    The piece before goes with it as a decorator would, the piece after is taken in, so
    that it stays one unit with its name."""
    out: list[Stmt] = []
    for stmt in stmts:
        prev = out[-1] if out else None
        if (
            prev is not None
            and prev.kind in ("def", "class")
            and stmt.kind == "other"
            and stmt.lineno == stmt.end_lineno == prev.end_lineno
        ):
            prev.end_col_offset = stmt.end_col_offset  # `};` split in two
            continue
        if (
            prev is not None
            and stmt.kind in ("def", "class")
            and prev.kind == "other"
            and prev.end_lineno == stmt.lineno
            and not prev.decorator_list
        ):
            out.pop()
            stmt.decorator_list = [prev, *stmt.decorator_list]
        out.append(stmt)
    return out


def parse(data: bytes, starts: list[int], language: str) -> Tree | None:
    """The statements of ``data`` (UTF-8 bytes, with ``starts`` its line starts), or None
    where there is no grammar, or where a quarter of the text or more does not parse."""
    bom = 3 if data.startswith(b"\xef\xbb\xbf") else 0
    text = data[bom:] if bom else data
    root = _root(text, language)
    if language == "c" and (root is None or root.has_error):
        # A `.h` file is C or C++: one the C grammar stumbles on is read as C++ where
        # that goes better.
        other = _root(text, "cpp")
        if other is not None and (root is None or not other.has_error or _bad(other) < _bad(root)):
            root = other
    if root is None or root.type == "ERROR" or _bad(root) * 4 >= max(len(text), 1):
        return None
    return Tree(data, starts, bom, root)


def _root(text: bytes, language: str) -> Any | None:
    grammar = _language(language)
    if grammar is None:
        return None
    import tree_sitter

    try:
        return tree_sitter.Parser(grammar).parse(text).root_node
    except (ValueError, RuntimeError):
        return None


def _bad(root: Any) -> int:
    """How many bytes the top-level nodes that did not parse cover."""
    if not root.has_error:
        return 0
    return sum(
        child.end_byte - child.start_byte
        for child in root.children
        if child.type == "ERROR" or child.is_missing
    )


# ----------------------------------------------------------------- node kinds


def _inner(node: Any) -> Any:
    """The declaration inside ``export``, ``declare``, ``template <...>`` (C's
    ``declaration`` only when it holds a struct, class or function body)."""
    seen = 0
    while node.type in _WRAPPERS and seen < 4:
        seen += 1
        inner = node.child_by_field_name("declaration")
        if inner is None:
            inner = next(
                (
                    kid
                    for kid in node.named_children
                    if kid.type in _DEFS
                    or kid.type in _CLASSES
                    or kid.type in _WRAPPERS
                    or kid.type in _VARIABLES
                ),
                None,
            )
        if inner is None:
            if node.type == "declaration":
                # C/C++: `struct S {...};` or `class C {...} c;` is a declaration.
                inner = node.child_by_field_name("type")
                if inner is not None and inner.type in _CLASSES and _body(inner) is not None:
                    return inner
            return node
        node = inner
    return node


def _what(node: Any) -> tuple[str, str | None]:
    """A node's kind and name."""
    inner = _inner(node)
    kind = inner.type
    if kind in _DEFS:
        if kind == "function_definition" and _body(inner) is None:
            return "other", None
        return "def", _name(inner)
    if kind in _CLASSES:
        if _body(inner) is None:  # `struct S;`, `class A;`: a declaration only
            return "other", None
        return "class", _name(inner)
    if kind in _IMPORTS or (kind == "call" and inner.text.startswith((b"require", b"load "))):
        return "import", None
    if kind in _VARIABLES:
        declarators = [kid for kid in inner.named_children if kid.type == "variable_declarator"]
        if len(declarators) == 1:
            value = declarators[0].child_by_field_name("value")
            if value is not None and value.type in _FUNCTION_VALUES:
                return "def", _text(declarators[0].child_by_field_name("name"))
    if kind == "expression_statement":  # PHP's `require 'x.php';`
        kid = inner.named_children[0] if inner.named_child_count else None
        if kid is not None and kid.type in (
            "require_expression",
            "require_once_expression",
            "include_expression",
            "include_once_expression",
        ):
            return "import", None
    return "other", None


def _name(node: Any) -> str | None:
    """A def's or class's name: its ``name`` field, a C declarator's identifier, a Rust
    impl's type, a Go method's receiver type before the method's name."""
    name = node.child_by_field_name("name")
    if name is None and node.type == "impl_item":
        name = node.child_by_field_name("type")
    if name is None and node.type == "type_declaration":  # Go: type Server struct {...}
        spec = next((kid for kid in node.named_children if kid.type == "type_spec"), None)
        name = spec.child_by_field_name("name") if spec is not None else None
    if name is None:
        declarator = node.child_by_field_name("declarator")
        for _ in range(8):
            if declarator is None or declarator.type in _NAMES:
                break
            declarator = declarator.child_by_field_name("declarator") or next(
                (kid for kid in declarator.named_children if kid.type in _NAMES), None
            )
        name = declarator
    if name is None:
        name = next((kid for kid in node.named_children if kid.type in _NAMES), None)
    text = _text(name)
    if text is not None and node.type == "method_declaration":
        receiver = node.child_by_field_name("receiver")  # Go: func (s *Server) Handle
        if receiver is not None:
            kind = next((k.child_by_field_name("type") for k in receiver.named_children), None)
            owner = _text(kind)
            if owner:
                owner = owner.lstrip("*&").split("[", 1)[0]
                text = f"{owner}.{text}"
    return text


def _text(node: Any) -> str | None:
    if node is None:
        return None
    text = node.text.decode("utf-8", "replace").strip("\"'`")  # `declare module "m"`
    return " ".join(text.split()) or None


def _body(node: Any) -> Any | None:
    """The node holding a body's statements or a class's members: the ``body`` field,
    else the first body-like node within a few levels; a body holding only a list of
    statements is that list."""
    node = _inner(node)
    body = node.child_by_field_name("body")
    if body is None or body.type not in _BODIES:
        body = _find_body(node, 3) if body is None else body
    if body is None:
        return None
    for _ in range(3):
        named = [kid for kid in body.named_children if "comment" not in kid.type]
        if len(named) == 1 and named[0].type in _BODIES:
            body = named[0]
        else:
            break
    return body


def _find_body(node: Any, depth: int) -> Any | None:
    for kid in node.named_children:
        if kid.type in _BODIES:
            return kid
    if depth > 1:
        for kid in node.named_children:
            found = _find_body(kid, depth - 1)
            if found is not None:
                return found
    return None


def _preproc_items(node: Any) -> list[Any]:
    """What ``#if``/``#ifdef`` holds, its ``#else`` branches' included, in order."""
    items: list[Any] = []
    skip = {"name", "condition"}
    for i, kid in enumerate(node.children):
        if node.field_name_for_child(i) in skip:
            continue
        if kid.type in _PREPROC:
            items.extend(_preproc_items(kid))
        else:
            items.append(kid)
    return items
