"""Scope for code that is not Python: the definition around the cursor, for brace and `end` languages.

Each source is written in the style it tests; lines are found by a text that occurs on exactly one
line, so an expectation reads as "from the doc comment to the closing brace" rather than numbers.
"""

from __future__ import annotations

import pytest

from lsp_server.regions.code import code_family, find_code_definition
from lsp_server.regions.definition import Definition


def line(src: str, needle: str) -> int:
    """The 0-based line holding `needle`, which must be on exactly one line."""
    hits = [i for i, text in enumerate(src.split("\n")) if needle in text]
    assert len(hits) == 1, f"{needle!r} is on lines {hits}"
    return hits[0]


def at(src: str, needle: str, family: str) -> Definition | None:
    return find_code_definition(src, line(src, needle), family)


Needle = str | tuple[str, int]  # a line's text, or (text, n): n lines below the line with that text


def line_at(src: str, needle: Needle) -> int:
    if isinstance(needle, tuple):
        return line(src, needle[0]) + needle[1]
    return line(src, needle)


def span(src: str, first: Needle, last: Needle) -> tuple[int, int]:
    return line_at(src, first), line_at(src, last)


def lines_of(found: Definition | None) -> tuple[int, int] | None:
    return None if found is None else (found.first_line, found.last_line)


def assert_at(src: str, family: str, cursors: list[str], first: Needle, last: Needle, kind: str) -> Definition:
    """Every cursor needle gives the definition spanning the `first` needle's line to the `last`'s."""
    expected = span(src, first, last)
    found = None
    for cursor in cursors:
        found = at(src, cursor, family)
        assert lines_of(found) == expected, f"cursor on {cursor!r}: {found}"
        assert found is not None and found.kind == kind, f"cursor on {cursor!r}: {found}"
    assert found is not None
    return found


# -- families -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("language", "family"),
    [
        ("typescript", "js"),
        ("typescriptreact", "js"),
        ("javascript", "js"),
        ("javascriptreact", "js"),
        ("go", "go"),
        ("rust", "rust"),
        ("c", "c"),
        ("cpp", "c"),
        ("objective-c", "c"),
        ("java", "java"),
        ("kotlin", "java"),
        ("csharp", "csharp"),
        ("swift", "swift"),
        ("php", "php"),
        ("ruby", "ruby"),
        ("lua", "lua"),
    ],
)
def test_code_family_reads_language_ids_and_extension_names(language: str, family: str) -> None:
    assert code_family(language) == family


@pytest.mark.parametrize("language", ["python", "plain text", "yaml", "markdown", "json", "shellscript", "cobol"])
def test_code_family_leaves_other_languages_to_the_indentation_fallback(language: str) -> None:
    assert code_family(language) is None


def test_an_unknown_family_or_a_line_past_the_end_gives_none() -> None:
    assert find_code_definition("function f() {\n}\n", 0, "cobol") is None
    assert find_code_definition("function f() {\n}\n", 99, "js") is None
    assert find_code_definition("", 0, "js") is None


def test_the_braces_family_reads_c_like_code() -> None:
    src = "int twice(int x) {\n    return 2 * x;\n}\n"
    assert lines_of(find_code_definition(src, 1, "braces")) == (0, 2)


# -- TypeScript and JavaScript ------------------------------------------------------------------------

TS_SIGNATURES = """\
import { get } from "./http";

/**
 * Fetches data. A brace in a comment: {
 */
export async function fetchData(
  url: string,
  opts: { retries: number },
): Promise<{ ok: boolean }> {
  const res = await get(url, opts);
  return { ok: res.status === 200 };
}

export const load = async <T,>(
  key: string,
): Promise<T> => {
  return JSON.parse(key) as T;
};

const twice = (x: number) =>
  x * 2;
"""


def test_ts_signature_over_several_lines_black_style() -> None:
    found = assert_at(
        TS_SIGNATURES,
        "js",
        [
            "Fetches data",
            "export async function fetchData(",
            "  url: string,",
            "): Promise<{ ok",
            "const res",
            "return { ok",
        ],
        "/**",
        ("return { ok", 1),
        "function",
    )
    assert found.name == "fetchData"
    # The closing brace's line belongs to it too.
    assert lines_of(find_code_definition(TS_SIGNATURES, line(TS_SIGNATURES, "return { ok") + 1, "js")) == (
        line(TS_SIGNATURES, "/**"),
        line(TS_SIGNATURES, "return { ok") + 1,
    )


def test_ts_arrow_functions_assigned_to_consts_are_the_whole_statement() -> None:
    found = assert_at(
        TS_SIGNATURES,
        "js",
        ["export const load", "key: string", "JSON.parse"],
        "export const load",
        ("JSON.parse", 1),
        "function",
    )
    assert found.name == "load"
    end = line(TS_SIGNATURES, "JSON.parse") + 1  # `};`
    assert lines_of(find_code_definition(TS_SIGNATURES, end, "js")) == (line(TS_SIGNATURES, "export const load"), end)
    # An expression body, over two lines.
    assert_at(TS_SIGNATURES, "js", ["const twice", "x * 2;"], "const twice", "x * 2;", "function")


def test_ts_top_level_lines_are_in_no_definition() -> None:
    assert at(TS_SIGNATURES, "import { get }", "js") is None
    blank = line(TS_SIGNATURES, "export const load") - 1
    assert find_code_definition(TS_SIGNATURES, blank, "js") is None


TS_DECORATORS = """\
@Component({
  selector: "app-root",
  template: `<div (click)="go()">{{ title }}</div>`,
})
export class AppComponent {
  @Input() title = "x";

  // Fires on resize.
  @HostListener("window:resize", ["$event"])
  @Debounce({
    wait: 300,
  })
  onResize(event: UIEvent): void {
    if (event) {
      this.resize();
    }
  }

  get total(): number {
    return 1;
  }

  static async #load(): Promise<void> {
    await 0;
  }

  private handler = (e: Event): void => {
    console.log(e);
  };

  constructor(private readonly svc: Service) {
    super();
  }
}
"""


def test_ts_multi_line_decorators_belong_to_the_method_from_its_body_and_its_decorator_lines() -> None:
    found = assert_at(
        TS_DECORATORS,
        "js",
        ["Fires on resize", "@HostListener", "@Debounce({", "wait: 300", "onResize(event", "this.resize()"],
        "Fires on resize",
        ("this.resize()", 2),
        "method",
    )
    assert found.name in ("onResize", "AppComponent.onResize")
    assert lines_of(at(TS_DECORATORS, "this.resize()", "js")) == (
        line(TS_DECORATORS, "Fires on resize"),
        line(TS_DECORATORS, "this.resize()") + 2,
    )


def test_ts_class_decorator_lines_belong_to_the_class() -> None:
    expected = (0, len(TS_DECORATORS.split("\n")) - 2)
    for cursor in ("@Component({", 'selector: "app-root"', "export class AppComponent", '@Input() title = "x";'):
        found = at(TS_DECORATORS, cursor, "js")
        assert lines_of(found) == expected and found is not None and found.kind == "class", cursor
        assert found.name == "AppComponent"


def test_ts_class_members_getters_private_static_property_arrows_constructors() -> None:
    assert_at(TS_DECORATORS, "js", ["get total()", "return 1;"], "get total()", ("return 1;", 1), "method")
    assert_at(TS_DECORATORS, "js", ["static async #load", "await 0;"], "static async #load", ("await 0;", 1), "method")
    assert_at(
        TS_DECORATORS, "js", ["private handler", "console.log(e)"], "private handler", ("console.log(e)", 1), "method"
    )
    assert_at(
        TS_DECORATORS, "js", ["constructor(private", "super();"], "constructor(private", ("super();", 1), "method"
    )


JS_NESTING = """\
function outer(items) {
  function inner(x) {
    return x + 1;
  }

  class Local {
    method() {
      return inner(2);
    }
  }

  return items.map(function (item) {
    function named(y) {
      return y;
    }
    return named(item);
  });
}

(function () {
  var hidden = 1;
})();

describe("suite", () => {
  it("works", () => {
    expect(1).toBe(1);
  });
});

exports.handler = function (event) {
  return event;
};

Widget.prototype.render = function () {
  return "<div>";
};

callbacks["on-end"] = (id) => Promise.resolve(id);
"""


def test_js_nested_functions_classes_and_methods_of_nested_classes() -> None:
    assert_at(JS_NESTING, "js", ["function inner", "return x + 1"], "function inner", ("return x + 1", 1), "function")
    assert_at(JS_NESTING, "js", ["method() {", "return inner(2)"], "method() {", ("return inner(2)", 1), "method")
    local = at(JS_NESTING, "class Local", "js")
    assert local is not None and local.kind == "class" and local.name == "Local"


def test_js_anonymous_callbacks_are_no_definitions_but_named_functions_inside_them_are() -> None:
    # The callback's body belongs to the function around it...
    assert_at(JS_NESTING, "js", ["return named(item)"], "function outer", ("return named(item)", 2), "function")
    # ...but a function declared inside the callback is a definition of its own.
    assert_at(JS_NESTING, "js", ["function named", "return y;"], "function named", ("return y;", 1), "function")


def test_js_iife_wrappers_and_test_callbacks_are_no_definitions() -> None:
    assert at(JS_NESTING, "var hidden", "js") is None
    assert at(JS_NESTING, "expect(1)", "js") is None


def test_js_assignments_of_functions_are_the_whole_statement() -> None:
    found = assert_at(
        JS_NESTING, "js", ["exports.handler", "return event;"], "exports.handler", ("return event;", 1), "function"
    )
    assert found.name == "exports.handler"
    assert_at(JS_NESTING, "js", ['return "<div>"'], "Widget.prototype.render", ('return "<div>"', 1), "function")
    assert_at(JS_NESTING, "js", ['callbacks["on-end"]'], 'callbacks["on-end"]', 'callbacks["on-end"]', "function")


JS_OBJECTS = """\
export const api = {
  get(id) {
    return fetch(id);
  },
  post: function (body) {
    return send(body);
  },
  put: async (x) => {
    return x;
  },
  del: (x) => remove(x),
  async *stream() {
    yield 1;
  },
  label: "not a function {",
};

export default {
  data() {
    return { a: 1 };
  },
};
"""


def test_js_object_literal_methods() -> None:
    assert_at(JS_OBJECTS, "js", ["get(id) {", "return fetch(id);"], "get(id) {", ("return fetch(id);", 1), "method")
    assert_at(JS_OBJECTS, "js", ["post: function", "return send"], "post: function", ("return send", 1), "method")
    assert_at(JS_OBJECTS, "js", ["put: async", "return x;"], "put: async", ("return x;", 1), "method")
    assert_at(JS_OBJECTS, "js", ["del: (x)"], "del: (x)", "del: (x)", "function")
    assert_at(JS_OBJECTS, "js", ["async *stream", "yield 1"], "async *stream", ("yield 1", 1), "method")
    assert_at(JS_OBJECTS, "js", ["data() {", "return { a: 1 }"], "data() {", ("return { a: 1 }", 1), "method")
    # A plain property is no definition; the object itself is none either.
    assert at(JS_OBJECTS, "label:", "js") is None


JS_STRINGS = """\
function tricky() {
  const s = "}";
  const t = '{';
  const re = /[{}]+\\/}/g;
  const html = `
    <div>${items.map((i) => `<li>${i}</li>`).join("")}</div>
    function fake() {
  `;
  /* a comment with a brace } and a keyword: function nope() { */
  // and another }
  return s + t;
}

function after() {
  return 2;
}
"""


def test_js_braces_and_keywords_in_strings_templates_regexes_and_comments_do_not_count() -> None:
    cursors = ['const s = "}"', "const re", "function fake", "a comment with a brace", "return s + t"]
    assert_at(JS_STRINGS, "js", cursors, "function tricky", ("return s + t", 1), "function")
    assert_at(JS_STRINGS, "js", ["function after", "return 2"], "function after", ("return 2", 1), "function")


TS_DECLARATIONS = """\
export interface Shape {
  area(): number;
  name: string;
}

export enum Color {
  Red = "red",
  Green = "green",
}

export namespace Geometry.Utils {
  export function double(x: number): number {
    return x * 2;
  }
}

declare module "foo" {
  interface Options {
    a: number;
  }
}

export abstract class Repo<T> extends Base<T> implements Store<T> {
  abstract find(id: string): T;
}
"""


def test_ts_interfaces_enums_namespaces_and_ambient_modules() -> None:
    assert_at(
        TS_DECLARATIONS,
        "js",
        ["area(): number", "name: string"],
        "export interface Shape",
        ("name: string", 1),
        "interface",
    )
    assert_at(TS_DECLARATIONS, "js", ['Red = "red"'], "export enum Color", ('Green = "green"', 1), "enum")
    namespace = at(TS_DECLARATIONS, "export namespace", "js")
    assert namespace is not None and namespace.kind == "namespace" and namespace.name == "Geometry.Utils"
    assert_at(TS_DECLARATIONS, "js", ["return x * 2"], "export function double", ("return x * 2", 1), "function")
    ambient = at(TS_DECLARATIONS, 'declare module "foo"', "js")
    assert ambient is not None and ambient.kind == "namespace"
    assert_at(TS_DECLARATIONS, "js", ["a: number"], "interface Options", ("a: number", 1), "interface")
    # An abstract method has no body: the cursor on it is in its class.
    repo = at(TS_DECLARATIONS, "abstract find", "js")
    assert repo is not None and repo.kind == "class" and repo.name == "Repo"


JS_BROKEN = """\
function a() {
  if (x) {
    doA();

function b() {
  return 1;
}

export function c() {
  return 2;
}
"""


def test_js_a_buffer_mid_edit_resynchronises_at_the_next_top_level_definition() -> None:
    # `a` is missing two `}`: the damage does not spill into the definitions below it...
    assert_at(JS_BROKEN, "js", ["return 1"], "function b", ("return 1", 1), "function")
    assert_at(JS_BROKEN, "js", ["return 2"], "export function c", ("return 2", 1), "function")
    # ...and `a` itself ends before them.
    assert lines_of(at(JS_BROKEN, "doA()", "js")) == span(JS_BROKEN, "function a", "doA()")


# -- Go -----------------------------------------------------------------------------------------------

GO_SOURCE = """\
package server

import "net/http"

// Server serves. A brace in a comment: {
type Server struct {
	mux  *http.ServeMux
	name string
}

// Handle serves one request.
//
// It never panics.
func (s *Server) Handle(
	w http.ResponseWriter,
	r *http.Request,
) error {
	go func() {
		s.log("}")
	}()
	msg := `raw string with { and
		func fake() {`
	return write(w, msg)
}

func (s Server) Done() <-chan struct{} {
	return nil
}

type (
	Handler interface {
		Serve() error
	}
	Pair[T any] struct {
		A, B T
	}
)

var registry = map[string]int{
	"a": 1,
}
"""


def test_go_methods_with_receivers_and_doc_comments() -> None:
    found = assert_at(
        GO_SOURCE,
        "go",
        [
            "Handle serves one request",
            "// It never panics",
            "func (s *Server) Handle(",
            "r *http.Request,",
            ") error {",
        ],
        "Handle serves one request",
        ("return write(w, msg)", 1),
        "method",
    )
    assert found.name == "Server.Handle"
    # A function literal is no definition; a raw string's braces and keywords do not count.
    cursors = ["go func() {", 's.log("}")', "msg := `raw", "return write"]
    assert_at(GO_SOURCE, "go", cursors, "Handle serves one request", ("return write(w, msg)", 1), "method")


def test_go_struct_results_are_no_bodies() -> None:
    found = assert_at(GO_SOURCE, "go", ["Done() <-chan", "return nil"], "Done() <-chan", ("return nil", 1), "method")
    assert found.name == "Server.Done"


def test_go_type_declarations_alone_and_grouped() -> None:
    server = assert_at(
        GO_SOURCE, "go", ["type Server struct", "mux  *http"], "// Server serves", ("name string", 1), "struct"
    )
    assert server.name == "Server"
    handler = assert_at(
        GO_SOURCE, "go", ["Handler interface", "Serve() error"], "Handler interface", ("Serve() error", 1), "interface"
    )
    assert handler.name == "Handler"
    assert_at(GO_SOURCE, "go", ["A, B T"], "Pair[T any] struct", ("A, B T", 1), "struct")


GO_LOCAL_TYPES = """\
func TestFields(t *testing.T) {
	cases := []struct {
		name string
	}{{
		name: "a",
		make: func() any {
			type (
				S1 struct{ x int }
				S2 struct {
					S1
				}
			)
			return S2{}
		},
	}}
	_ = cases
}
"""


def test_go_local_type_groups_inside_function_literals() -> None:
    assert_at(GO_LOCAL_TYPES, "go", ["S1 struct{ x int }"], "S1 struct{ x int }", "S1 struct{ x int }", "struct")
    assert_at(GO_LOCAL_TYPES, "go", ["S2 struct {", "\t\t\t\t\tS1"], "S2 struct {", ("S2 struct {", 2), "struct")
    # An anonymous struct type and a function literal are no definitions.
    assert_at(GO_LOCAL_TYPES, "go", ["name string", "return S2{}"], "func TestFields", ("_ = cases", 1), "function")


def test_go_top_level_lines_and_composite_literals_are_in_no_definition() -> None:
    assert at(GO_SOURCE, "package server", "go") is None
    assert at(GO_SOURCE, "import", "go") is None
    assert at(GO_SOURCE, '"a": 1,', "go") is None


# -- Rust ---------------------------------------------------------------------------------------------

RUST_SOURCE = """\
use std::fmt;

/// A point.
#[derive(Debug, Clone)]
#[cfg_attr(
    feature = "serde",
    derive(Serialize, Deserialize)
)]
pub struct Point<'a> {
    x: i32,
    name: &'a str,
}

impl<'a, T> fmt::Display for Wrapper<'a, T>
where
    T: fmt::Display + Clone,
{
    /// Formats it.
    #[inline]
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = r#"a "}" brace"#;
        let c = '{';
        write!(f, "{}{}{}", s, c, self.0)
    }

    pub async fn load<R>(
        &self,
        reader: R,
    ) -> Result<Vec<u8>, Error>
    where
        R: Read + Send,
    {
        let add = |x: i32| {
            x + 1
        };
        Ok(vec![add(1) as u8])
    }
}

mod tests {
    #[test]
    fn it_works() {
        assert_eq!(1, 1);
    }
}
"""


def test_rust_fn_in_impl_with_where_clauses_and_attributes() -> None:
    fmt = assert_at(
        RUST_SOURCE,
        "rust",
        ["/// Formats it.", "#[inline]", "fn fmt(", "let s = r#", "let c = '{'", "write!"],
        "/// Formats it.",
        ("write!", 1),
        "method",
    )
    assert fmt.name == "Wrapper.fmt"
    load = assert_at(
        RUST_SOURCE,
        "rust",
        ["pub async fn load", "reader: R,", "R: Read + Send", "let add", "x + 1", "Ok(vec!"],
        "pub async fn load",
        ("Ok(vec!", 1),
        "method",
    )
    assert load.name == "Wrapper.load"


def test_rust_impl_struct_module_and_multi_line_attributes() -> None:
    point = assert_at(
        RUST_SOURCE,
        "rust",
        ["#[cfg_attr(", 'feature = "serde"', "    x: i32,"],
        "/// A point.",
        ("name: &'a str", 1),
        "struct",
    )
    assert point.name == "Point"
    impl = at(RUST_SOURCE, "T: fmt::Display + Clone", "rust")
    assert impl is not None and impl.kind == "impl" and impl.name == "Wrapper"
    assert impl.first_line == line(RUST_SOURCE, "impl<'a, T>")
    assert_at(RUST_SOURCE, "rust", ["#[test]", "assert_eq!"], "#[test]", ("assert_eq!", 1), "function")
    module = at(RUST_SOURCE, "mod tests", "rust")
    assert module is not None and module.kind == "module"
    assert at(RUST_SOURCE, "use std::fmt;", "rust") is None


# -- Java ---------------------------------------------------------------------------------------------

JAVA_SOURCE = """\
package com.example;

/**
 * A service. Keywords in comments: class Foo {
 */
@Service
@RequestMapping(
    value = "/api",
    produces = "application/json"
)
public class UserService<T extends Comparable<T>> extends Base implements Runnable {
    private static final String SQL = \"\"\"
        SELECT * FROM users WHERE name = '{'
        \"\"\";

    @Override
    public void run() {
        System.out.println("}");
    }

    @GetMapping("/users/{id}")
    public <R> ResponseEntity<R> findUser(
            @PathVariable("id") long id,
            @RequestParam(required = false) String name
    ) throws IOException, NotFoundException {
        Runnable r = () -> {
            doIt();
        };
        return null;
    }

    public UserService(int size) {
        super(size);
    }

    static class Inner {
        void helper() {
            new Thread(new Runnable() {
                @Override
                public void run() {
                    work();
                }
            }).start();
        }
    }
}
"""


def test_java_annotations_multi_line_signatures_and_lambdas() -> None:
    find = assert_at(
        JAVA_SOURCE,
        "java",
        [
            '@GetMapping("/users/{id}")',
            "public <R> ResponseEntity<R> findUser(",
            "@RequestParam",
            ") throws",
            "doIt();",
            "return null;",
        ],
        '@GetMapping("/users/{id}")',
        ("return null;", 1),
        "method",
    )
    assert find.name == "UserService.findUser"
    # `@Override` is on two lines: the run() method's is two lines above its body.
    body = line(JAVA_SOURCE, 'System.out.println("}")')
    for cursor in (body - 2, body - 1, body, body + 1):
        run = find_code_definition(JAVA_SOURCE, cursor, "java")
        assert lines_of(run) == (body - 2, body + 1) and run is not None and run.name == "UserService.run", cursor


def test_java_class_with_multi_line_annotation_constructor_and_nested_classes() -> None:
    last = len(JAVA_SOURCE.split("\n")) - 2
    for cursor in ("A service.", "@Service", "value = ", "public class UserService", "private static final String SQL"):
        found = at(JAVA_SOURCE, cursor, "java")
        assert lines_of(found) == (line(JAVA_SOURCE, "/**"), last) and found is not None and found.kind == "class", (
            cursor
        )
    assert_at(
        JAVA_SOURCE,
        "java",
        ["public UserService(int size)", "super(size)"],
        "public UserService(int",
        ("super(size)", 1),
        "method",
    )
    helper = assert_at(
        JAVA_SOURCE, "java", ["void helper()", "new Thread("], "void helper()", ("}).start();", 1), "method"
    )
    assert helper.name == "Inner.helper"
    # A method of an anonymous class is a definition too.
    work = at(JAVA_SOURCE, "work();", "java")
    assert lines_of(work) == (line(JAVA_SOURCE, "work();") - 2, line(JAVA_SOURCE, "work();") + 1)
    assert work is not None and work.kind == "method"
    assert at(JAVA_SOURCE, "package com.example;", "java") is None


# -- C# -----------------------------------------------------------------------------------------------

CSHARP_SOURCE = """\
using System;

namespace Demo.Services
{
    /// <summary>Keeps users. A brace: {</summary>
    [Serializable]
    [ApiController, Route("api/[controller]")]
    public sealed class UserStore<T> : IStore<T> where T : class, new()
    {
        private const string Path = @"C:\\temp\\{x}";
        private readonly string _s = $"{Path}/{{literal}}";

        public string Name
        {
            get { return _name; }
            set { _name = value; }
        }

        public UserStore(int capacity) : base(capacity)
        {
            Count = 0;
        }

        [HttpGet("{id}")]
        public async Task<ActionResult<T>> GetAsync(
            int id,
            CancellationToken token = default)
        {
            if (id < 0)
            {
                return null;
            }
            return await Task.FromResult<T>(null);
        }

        private struct Slot
        {
            public int Value;
        }
    }

    public interface IStore<T>
    {
        T Get(int id);
    }
}
"""


def test_csharp_attributes_verbatim_strings_and_async_methods() -> None:
    get = assert_at(
        CSHARP_SOURCE,
        "csharp",
        ['[HttpGet("{id}")]', "public async Task", "int id,", "CancellationToken token", "return null;", "await Task"],
        '[HttpGet("{id}")]',
        ("await Task", 1),
        "method",
    )
    assert get.name == "UserStore.GetAsync"


def test_csharp_classes_constructors_properties_structs_and_namespaces() -> None:
    store = at(CSHARP_SOURCE, "private const string Path", "csharp")
    assert store is not None and store.kind == "class" and store.name == "UserStore"
    assert store.first_line == line(CSHARP_SOURCE, "/// <summary>")
    assert_at(
        CSHARP_SOURCE,
        "csharp",
        ["public UserStore(int", "Count = 0;"],
        "public UserStore(int",
        ("Count = 0;", 1),
        "method",
    )
    assert_at(
        CSHARP_SOURCE, "csharp", ["get { return", "set { _name"], "public string Name", ("set { _name", 1), "property"
    )
    assert_at(CSHARP_SOURCE, "csharp", ["public int Value;"], "private struct Slot", ("public int Value;", 1), "struct")
    assert_at(
        CSHARP_SOURCE, "csharp", ["T Get(int id);"], "public interface IStore", ("T Get(int id);", 1), "interface"
    )
    namespace = at(CSHARP_SOURCE, "namespace Demo.Services", "csharp")
    assert namespace is not None and namespace.kind == "namespace" and namespace.name == "Demo.Services"
    assert at(CSHARP_SOURCE, "using System;", "csharp") is None


# -- C ------------------------------------------------------------------------------------------------

C_SOURCE = """\
#include <stdio.h>
#define OPEN_BLOCK {

/* A counter.
 * Braces: { } */
struct counter {
    int value;
};

static const char *names[] = {"a", "}", "b"};

/**
 * Adds.
 */
static inline int
add(int a,
    int b)
{
    char c = '}';
    list_for_each(pos, head) {
        count++;
    }
    return a + b;
}

int main(int argc, char **argv) {
#ifdef DEBUG
    printf("debug {\\n");
#endif
    return add(1, 2);
}
"""


def test_c_split_return_type_allman_braces_and_macro_blocks() -> None:
    add = assert_at(
        C_SOURCE,
        "c",
        [
            "Adds.",
            "static inline int",
            "add(int a,",
            "    int b)",
            "char c = '}'",
            "list_for_each",
            "count++",
            "return a + b",
        ],
        "/**",
        ("return a + b", 1),
        "function",
    )
    assert add.name == "add"


def test_c_preprocessor_lines_strings_and_structs() -> None:
    assert_at(C_SOURCE, "c", ['printf("debug', "return add(1, 2)"], "int main(", ("return add(1, 2)", 1), "function")
    assert_at(C_SOURCE, "c", ["int value;"], "/* A counter.", ("int value;", 1), "struct")
    assert at(C_SOURCE, "static const char *names", "c") is None
    assert at(C_SOURCE, "#include", "c") is None


# -- C++ ----------------------------------------------------------------------------------------------

CPP_SOURCE = """\
#include <vector>

namespace app {

template <typename T, int N = 3>
class Buffer : public Base<T> {
public:
    Buffer() : data_{}, size_(0) {}

    explicit Buffer(int n)
        : size_(n) {
        data_.resize(n);
    }

    [[nodiscard]] int size() const noexcept { return size_; }

    T& operator[](int i) {
        auto g = [&](int x) {
            return x;
        };
        return data_[g(i)];
    }

private:
    struct Node {
        int v;
    };
    int size_;
};

void Buffer<int>::reset() {
    auto s = R"raw(a } b)raw";
}

}  // namespace app
"""


def test_cpp_namespaces_without_indentation_templates_and_constructors() -> None:
    buffer = assert_at(
        CPP_SOURCE,
        "c",
        ["template <typename T", "public:", "int size_;"],
        "template <typename T",
        ("int size_;", 1),
        "class",
    )
    assert buffer.name == "Buffer"
    assert_at(
        CPP_SOURCE,
        "c",
        ["explicit Buffer(int n)", ": size_(n) {", "data_.resize"],
        "explicit Buffer",
        ("data_.resize", 1),
        "method",
    )
    assert_at(CPP_SOURCE, "c", ["Buffer() : data_{}"], "Buffer() : data_{}", "Buffer() : data_{}", "method")
    assert_at(CPP_SOURCE, "c", ["[[nodiscard]]"], "[[nodiscard]]", "[[nodiscard]]", "method")


def test_cpp_operators_lambdas_raw_strings_and_out_of_class_methods() -> None:
    op = assert_at(
        CPP_SOURCE,
        "c",
        ["operator[]", "auto g = ", "return x;", "return data_"],
        "operator[]",
        ("return data_", 1),
        "method",
    )
    assert op.name == "Buffer.operator[]"
    reset = assert_at(
        CPP_SOURCE, "c", ["void Buffer<int>::reset", 'R"raw('], "void Buffer<int>::reset", ('R"raw(', 1), "method"
    )
    assert reset.name == "Buffer<int>::reset"
    # Between definitions, inside a namespace whose content is not indented: the namespace.
    namespace = find_code_definition(CPP_SOURCE, line(CPP_SOURCE, "namespace app {") + 1, "c")
    assert namespace is not None and namespace.kind == "namespace" and namespace.name == "app"
    assert lines_of(namespace) == span(CPP_SOURCE, "namespace app {", "}  // namespace app")


# -- Ruby ---------------------------------------------------------------------------------------------

RUBY_SOURCE = """\
require "json"

# Manages users.
module Admin
  class UserManager < Base
    SQL = <<~SQL
      SELECT * FROM users WHERE x = 'end'
    SQL

    # Adds a user.
    # Twice documented.
    def add(user)
      return if user.nil?
      @users << user unless @users.include?(user)
      kind = if user.admin? then :admin else :user end
      @users.each do |u|
        puts "#{u.name} end"
      end
      while pending? do
        step
      end
      ages = users.map { |u| u.age }
      user.class
    end

    def self.build(opts = {})
      new(**opts)
    end

    def valid? = users.any?

    class << self
      def registry
        @registry ||= {}
      end
    end
  end
end

def top_level(a, b)
  a + b
end

total = 1
"""


def test_ruby_end_blocks_with_modifiers_do_blocks_and_heredocs() -> None:
    add = assert_at(
        RUBY_SOURCE,
        "ruby",
        [
            "# Adds a user.",
            "def add(user)",
            "return if",
            "unless @users",
            "kind = if",
            "puts",
            "while pending?",
            "ages =",
            "user.class",
        ],
        "# Adds a user.",
        ("user.class", 1),
        "method",
    )
    assert add.name == "UserManager.add"


def test_ruby_classes_modules_singleton_and_endless_methods() -> None:
    build = assert_at(
        RUBY_SOURCE, "ruby", ["def self.build", "new(**opts)"], "def self.build", ("new(**opts)", 1), "method"
    )
    assert build.name == "UserManager.build"
    assert_at(RUBY_SOURCE, "ruby", ["def valid? ="], "def valid? =", "def valid? =", "method")
    assert_at(RUBY_SOURCE, "ruby", ["def registry", "@registry ||="], "def registry", ("@registry ||=", 1), "method")
    manager = at(RUBY_SOURCE, "SELECT * FROM users", "ruby")
    assert manager is not None and manager.kind == "class"
    assert manager.first_line == line(RUBY_SOURCE, "class UserManager")
    module = at(RUBY_SOURCE, "module Admin", "ruby")
    assert module is not None and module.kind == "module" and module.first_line == line(RUBY_SOURCE, "# Manages users.")
    assert_at(RUBY_SOURCE, "ruby", ["def top_level", "a + b"], "def top_level", ("a + b", 1), "function")
    assert at(RUBY_SOURCE, "total = 1", "ruby") is None
    assert at(RUBY_SOURCE, 'require "json"', "ruby") is None


# -- Lua ----------------------------------------------------------------------------------------------

LUA_SOURCE = """\
local M = {}

--- Adds two numbers.
-- @param a number
function M.add(a, b)
  if a > b then
    return a
  elseif a < b then
    return b
  end
  for i = 1, 3 do
    print(i)
  end
  return a + b
end

local function helper(x)
  local t = [[
    function not_real()
    end
  ]]
  --[[ a block comment with end
       and function ]]
  repeat
    x = x - 1
  until x < 0
  pcall(function() error("x") end)
  return x
end

M.handlers = {
  on_click = function(e)
    return e
  end,
}

local f = function(y)
  return y
end

return M
"""


def test_lua_functions_with_if_for_repeat_and_long_strings() -> None:
    add = assert_at(
        LUA_SOURCE,
        "lua",
        ["--- Adds two numbers.", "function M.add", "elseif", "print(i)", "return a + b"],
        "--- Adds two numbers.",
        ("return a + b", 1),
        "function",
    )
    assert add.name == "M.add"
    cursors = [
        "local function helper",
        "function not_real",
        "a block comment",
        "until x < 0",
        'pcall(function() error("x") end)',
        "return x",
    ]
    assert_at(LUA_SOURCE, "lua", cursors, "local function helper", ("return x", 1), "function")


def test_lua_functions_assigned_to_names_and_fields() -> None:
    on_click = assert_at(
        LUA_SOURCE, "lua", ["on_click = function", "return e"], "on_click = function", ("return e", 1), "function"
    )
    assert on_click.name == "on_click"
    local = assert_at(
        LUA_SOURCE, "lua", ["local f = function", "return y"], "local f = function", ("return y", 1), "function"
    )
    assert local.name == "f"
    assert at(LUA_SOURCE, "local M = {}", "lua") is None
    assert at(LUA_SOURCE, "return M", "lua") is None


# -- other brace languages ------------------------------------------------------------------------------

KOTLIN_SOURCE = """\
/** Docs. */
@Suppress("unused")
data class User(val name: String) : Base() {
    suspend fun <T> load(
        id: Long,
    ): T? {
        val s = \"\"\"
            raw } string
        \"\"\"
        return null
    }
}

fun String.shout(): String {
    return uppercase()
}
"""


def test_kotlin_through_the_java_family() -> None:
    assert_at(
        KOTLIN_SOURCE,
        "java",
        ["suspend fun", "id: Long,", "raw } string", "return null"],
        "suspend fun",
        ("return null", 1),
        "method",
    )
    user = at(KOTLIN_SOURCE, "@Suppress", "java")
    assert user is not None and user.kind == "class" and user.name == "User" and user.first_line == 0
    assert_at(KOTLIN_SOURCE, "java", ["return uppercase()"], "fun String.shout", ("return uppercase()", 1), "function")


SWIFT_SOURCE = """\
final class Circle: Shape {
    var radius: Double

    var diameter: Double {
        return radius * 2
    }

    init(radius: Double) {
        self.radius = radius
    }
}
"""


def test_swift_methods_initialisers_and_computed_properties() -> None:
    assert_at(SWIFT_SOURCE, "swift", ["return radius * 2"], "var diameter", ("return radius * 2", 1), "property")
    assert_at(SWIFT_SOURCE, "swift", ["self.radius = radius"], "init(radius", ("self.radius = radius", 1), "method")
    circle = at(SWIFT_SOURCE, "var radius: Double", "swift")
    assert circle is not None and circle.kind == "class"


PHP_SOURCE = """\
<?php
# A hash comment with {
#[Attribute]
class User extends Model
{
    public static function find(int $id): ?self
    {
        $sql = <<<SQL
        SELECT * FROM users WHERE id = {$id}
        SQL;
        return $sql;
    }
}
"""


def test_php_methods_heredocs_and_hash_comments() -> None:
    cursors = ["public static function find", "SELECT", "return $sql"]
    find = assert_at(PHP_SOURCE, "php", cursors, "public static function find", ("return $sql", 1), "method")
    assert find.name == "User.find"
    user = at(PHP_SOURCE, "class User", "php")
    assert user is not None and user.kind == "class" and user.first_line == line(PHP_SOURCE, "# A hash comment")


# -- line breaks --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("src", "family"),
    [(TS_DECORATORS, "js"), (GO_SOURCE, "go"), (RUST_SOURCE, "rust"), (CSHARP_SOURCE, "csharp"), (RUBY_SOURCE, "ruby")],
)
def test_crlf_line_breaks_give_the_same_definitions(src: str, family: str) -> None:
    crlf = src.replace("\n", "\r\n")
    for cursor in range(src.count("\n")):
        assert find_code_definition(crlf, cursor, family) == find_code_definition(src, cursor, family), cursor


def test_js_methods_named_like_keywords_in_an_assigned_class_expression() -> None:
    # whatwg-mimetype: `module.exports = class X {` holds `delete(name) {`, a method, not a statement.
    text = (
        "module.exports = class Params {\n  clear() {\n    this.m.clear();\n  }\n\n"
        "  delete(name) {\n    return this.m.delete(name);\n  }\n};\n"
    )
    found = find_code_definition(text, 6, "js")
    assert found is not None and (found.first_line, found.last_line, found.kind) == (5, 7, "method")


def test_ts_return_type_union_over_many_lines() -> None:
    # cheerio: a black-like signature whose union return type takes a line per member.
    head = "export function prop<T extends Node>(\n  this: Cheerio<T>,\n  value?: unknown,\n):\n"
    union = "".join(f"  | Member{i}\n" for i in range(9)) + "  | StyleProp {\n"
    text = head + union + "  if (x) {\n    return 1;\n  }\n}\n"
    cursor = text.count("\n") - 2
    found = find_code_definition(text, cursor, "js")
    assert found is not None and (found.first_line, found.last_line, found.name) == (0, text.count("\n") - 1, "prop")
