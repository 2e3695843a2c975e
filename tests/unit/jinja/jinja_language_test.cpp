// The Jinja features chat templates rely on, one at a time. Every expected string here is what Python's jinja2
// (3.1, set up as in shared/templates/render.py) renders for the same template.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "jinja/template.h"

namespace pagoda::jinja {
namespace {

RenderOptions fixed_clock() {
  RenderOptions o;
  o.now = [] { return make_local_time(2025, 1, 15, 10, 30, 0); };
  return o;
}

// Renders source with the variables of vars_json; "ERROR[<code>]: message" when parsing or rendering fails.
std::string render(const std::string& source, const std::string& vars_json = "{}",
                   const RenderOptions& options = fixed_clock()) {
  auto t = parse_template(source);
  if (!t.ok()) return "ERROR[" + t.error().code + "]: " + t.error().message;
  auto vars = Value::from_json(nlohmann::ordered_json::parse(vars_json));
  if (!vars.ok()) return "ERROR[json]: " + vars.error().message;
  auto out = t->render(*vars, options);
  if (!out.ok()) return "ERROR[" + out.error().code + "]: " + out.error().message;
  return *out;
}

bool fails(const std::string& source, const std::string& vars_json = "{}") {
  return render(source, vars_json).rfind("ERROR[", 0) == 0;
}

std::string error_code(const std::string& source, const std::string& vars_json = "{}") {
  const std::string r = render(source, vars_json);
  if (r.rfind("ERROR[", 0) != 0) return "(rendered: " + r + ")";
  return r.substr(6, r.find(']') - 6);
}

// ---- whitespace control ----------------------------------------------------------------------------------

TEST(JinjaWhitespace, TrimBlocksAndLstripBlocksAsTransformersSetsThem) {
  EXPECT_EQ(render("  {% if true %}\n    x\n  {% endif %}\n  y"), "    x\n  y");
  EXPECT_EQ(render("a\n{# c #}\nb\n  {# d #}  \nc"), "a\nb\n  \nc");
  EXPECT_EQ(render("{% if true %}\nx{% endif %}"), "x");  // trim_blocks eats the newline after %}
  EXPECT_EQ(render("{{ 'a' }}\nb"), "a\nb");             // but not after }}
  EXPECT_EQ(render("x  {% if true %}y{% endif %}"), "x  y");  // lstrip only from the start of a line
  EXPECT_EQ(render("  {{ 'a' }}"), "  a");                   // and not for {{ }}
}

TEST(JinjaWhitespace, DashesStripAllWhitespaceOnThatSide) {
  EXPECT_EQ(render("{%- if true -%}\n  a  \n{%- endif -%}\n b"), "ab");
  EXPECT_EQ(render("a  \n  {{- 'b' -}}  \n  c"), "abc");
  EXPECT_EQ(render("a \n{#- c -#}\n b"), "ab");
}

TEST(JinjaWhitespace, PlusDisablesLstripAndTrim) {
  EXPECT_EQ(render("  {%+ if true %}x{% endif %}"), "  x");
  EXPECT_EQ(render("{% if true +%}\nx{% endif %}"), "\nx");
}

TEST(JinjaWhitespace, OneTrailingNewlineIsDroppedAndCrlfNormalised) {
  EXPECT_EQ(render("a\n"), "a");
  EXPECT_EQ(render("a\n\n"), "a\n");
  EXPECT_EQ(render("a\r\nb\rc"), "a\nb\nc");
}

TEST(JinjaWhitespace, RawBlocksKeepTagsAsText) {
  EXPECT_EQ(render("{% raw %}{{ x }}{% endraw %}|"), "{{ x }}|");
}

// ---- values and operators --------------------------------------------------------------------------------

TEST(JinjaValues, NumbersFollowPython) {
  EXPECT_EQ(render("{{ 7 // 2 }}|{{ -7 // 2 }}|{{ 7 / 2 }}|{{ 6 / 2 }}|{{ 7 % 3 }}|{{ -7 % 3 }}|{{ 2 ** 10 }}"),
            "3|-4|3.5|3.0|1|2|1024");
  EXPECT_EQ(render("{{ 1e16 }}|{{ 1e15 }}|{{ 0.1 + 0.2 }}|{{ 1.5e-5 }}|{{ 3.0 }}"),
            "1e+16|1000000000000000.0|0.30000000000000004|1.5e-05|3.0");
  EXPECT_EQ(error_code("{{ 1 // 0 }}"), "ZeroDivisionError");
}

TEST(JinjaValues, ContainersPrintAsPythonRepr) {
  EXPECT_EQ(render(R"({{ [1, 2.5, "a", none, true, {"k": (1,)}] }}|{{ (1, 2) }}|{{ ["it's"] }})"),
            R"([1, 2.5, 'a', None, True, {'k': (1,)}]|(1, 2)|["it's"])");
  EXPECT_EQ(render("{{ none }}|{{ true }}|{{ undefined_name }}|"), "None|True||");
}

TEST(JinjaValues, StringLiteralEscapes) {
  EXPECT_EQ(render(R"({{ 'a\nb\t\x41\u00e9\'' }})"), "a\nb\tA\xC3\xA9'");
  EXPECT_EQ(render(R"({{ "a" 'b' }})"), "ab");  // adjacent literals concatenate
  EXPECT_EQ(render(R"({{ '\d' }})"), "\\d");     // unknown escapes stay
}

TEST(JinjaValues, ConcatenationAndTypeErrors) {
  EXPECT_EQ(render("{{ 'abc' ~ 1 ~ none }}|{{ [1] + [2] }}|{{ '=' * 3 }}"), "abc1None|[1, 2]|===");
  EXPECT_EQ(render("{{ 'a' + 1 }}"), "ERROR[TypeError]: can only concatenate str (not \"int\") to str");
  EXPECT_EQ(error_code("{{ none + 'a' }}"), "TypeError");
  EXPECT_EQ(error_code("{{ x + 'a' }}"), "UndefinedError");
}

TEST(JinjaValues, ComparisonsAndMembership) {
  EXPECT_EQ(render("{{ 1 < 2 < 3 }}|{{ 3 > 2 > 2 }}|{{ 'b' in 'abc' }}|{{ 1 not in [1] }}|{{ 'k' in {'k': 1} }}"),
            "True|False|True|False|True");
  EXPECT_EQ(render("{{ 1 == 1.0 }}|{{ [1] == (1,) }}|{{ x == y }}"), "True|False|True");
  EXPECT_EQ(render("{{ 'a' in none }}"), "ERROR[TypeError]: argument of type 'NoneType' is not iterable");
  EXPECT_EQ(error_code("{{ 1 < 'a' }}"), "TypeError");
}

TEST(JinjaValues, SlicingCountsCodePoints) {
  EXPECT_EQ(render(R"({{ "abcdef"[::-1] }}|{{ "abcdef"[1:4] }}|{{ [1,2,3,4][::2] }}|{{ "abcdef"[-2:] }})"),
            "fedcba|bcd|[1, 3]|ef");
  EXPECT_EQ(render("{{ [1,2,3][5:] }}|{{ 'h\xC3\xA9llo'[1:3] }}|{{ 'h\xC3\xA9llo'|length }}"), "[]|\xC3\xA9l|5");
  EXPECT_EQ(render("{{ [1,2,3][-1] }}|{{ [1,2][7] }}|"), "3||");
}

TEST(JinjaValues, AttributeAndItemLookupFallBackToEachOther) {
  const std::string vars = R"({"d": {"items": 1, "content": "c"}})";
  EXPECT_EQ(render("{{ d.content }}|{{ d['content'] }}|{{ d['items'] }}|{{ d.missing }}|", vars), "c|c|1||");
  // a.b finds the dict method first, as in Python (templates use x['items'] for that reason).
  EXPECT_EQ(render("{{ d.items()|list }}", vars), "[('items', 1), ('content', 'c')]");
  EXPECT_EQ(render("{{ d.missing.x }}", vars), "ERROR[UndefinedError]: 'dict object' has no attribute 'missing'");
  EXPECT_EQ(render("{{ n.strip() }}", R"({"n": null})"), "ERROR[UndefinedError]: 'None' has no attribute 'strip'");
}

TEST(JinjaValues, TheImmutableSandboxRefusesMutation) {
  EXPECT_EQ(render("{{ [1,2].append }}|"), "|");  // the attribute is an Undefined ...
  EXPECT_EQ(render("{% set l = [1] %}{{ l.append(2) }}"),  // ... that fails when called
            "ERROR[SecurityError]: access to attribute 'append' of 'list' object is unsafe.");
  EXPECT_EQ(error_code("{% set d = {} %}{{ d.update({'a': 1}) }}"), "SecurityError");
}

// ---- statements and scoping -----------------------------------------------------------------------------

TEST(JinjaStatements, LoopVariables) {
  EXPECT_EQ(render("{% for x in [1,2,3] %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}"
                   "{{ loop.length }}{{ loop.revindex }}{{ loop.previtem }}{{ loop.nextitem }};{% endfor %}"),
            "10TrueFalse332;21FalseFalse3213;32FalseTrue312;");
  EXPECT_EQ(render("{% for x in [1,2,3,4] if x is even %}{{ x }}{{ loop.index }}{% else %}none{% endfor %}|"
                   "{% for x in [] %}{{ x }}{% else %}empty{% endfor %}"),
            "2142|empty");
}

TEST(JinjaStatements, LoopControlsAndUnpacking) {
  EXPECT_EQ(render("{% for i in range(5) %}{% if i == 3 %}{% break %}{% endif %}{% if i == 1 %}{% continue %}"
                   "{% endif %}{{ i }}{% endfor %}"),
            "02");
  EXPECT_EQ(render(R"({% set a, b = 1, 2 %}{{ a }}{{ b }}{% for k, v in {"x": 1}.items() %}{{ k }}{{ v }}{% endfor %})"),
            "12x1");
  EXPECT_EQ(error_code("{% for a, b in [1] %}{% endfor %}"), "TypeError");
  EXPECT_EQ(error_code("{% break %}"), "TemplateSyntaxError");
}

TEST(JinjaStatements, RecursiveLoops) {
  EXPECT_EQ(render("{% for x in [[1,[2]],[3]] recursive %}{% if x is iterable %}<{{ loop(x) }}>{% else %}"
                   "{{ x }}{{ loop.depth }}{% endif %}{% endfor %}"),
            "<12<23>><32>");
}

TEST(JinjaStatements, SetInsideALoopDoesNotLeakButNamespacesDo) {
  EXPECT_EQ(render("{% set ns = namespace(x=1) %}{% for i in range(3) %}{% set ns.x = ns.x + i %}{% set y = i %}"
                   "{% endfor %}{{ ns.x }}|{{ y }}"),
            "4|");
  EXPECT_EQ(render("{% set x = 1 %}{% for i in range(2) %}{{ x }}{% set x = 2 %}{{ x }}{% endfor %}{{ x }}"), "12121");
  EXPECT_EQ(render("{% if true %}{% set x = 5 %}{% endif %}{{ x }}"), "5");
}

TEST(JinjaStatements, MacrosWithDefaultsKeywordsAndCaller) {
  EXPECT_EQ(render("{% macro m(a, b=2) %}[{{ a }}{{ b }}]{% endmacro %}{{ m(1) }}{{ m(1, 3) }}{{ m(b=5, a=4) }}"
                   "{{ m() }}"),
            "[12][13][45][2]");
  EXPECT_EQ(render("{% macro w() %}<{{ caller() }}>{% endmacro %}{% call w() %}body{% endcall %}"), "<body>");
  EXPECT_EQ(render("{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(3) }}"), "321");
  EXPECT_EQ(error_code("{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}"), "TypeError");
}

TEST(JinjaStatements, BlockSetFilterBlockAndGeneration) {
  EXPECT_EQ(render("{% filter upper %}abc{% endfilter %}|{% set s %}inner{% endset %}{{ s }}"), "ABC|inner");
  EXPECT_EQ(render("{%- generation -%}g{%- endgeneration -%}"), "g");
}

TEST(JinjaStatements, ConditionalExpressions) {
  EXPECT_EQ(render("{{ 'a' if true else 'b' }}|{{ 'a' if false }}|{{ 1 if none else 2 if true else 3 }}"), "a||2");
}

// ---- filters, tests, methods, globals ------------------------------------------------------------------

TEST(JinjaFilters, StringFilters) {
  EXPECT_EQ(render(R"({{ "  x  " | trim }}|{{ "hello-world o'neil"|title }}|{{ "aBC"|capitalize }}|{{ "Ab"|upper }})"),
            "x|Hello-World O'neil|Abc|AB");
  EXPECT_EQ(render(R"({{ "x"|indent(2) }}|{{ "a\nb\n\nc"|indent(2) }}|{{ "a\nb"|indent(2, first=true) }})"),
            "x|a\n  b\n\n  c|  a\n  b");
  EXPECT_EQ(render("{{ none|string }}|{{ none|trim }}|{{ undefined_var|trim }}|{{ undefined_var|length }}|"),
            "None|None||0|");
  EXPECT_EQ(render(R"({{ "a-b"|replace("-", "_") }}|{{ [1, 2]|join(", ") }}|{{ "one two"|wordcount }})"), "a_b|1, 2|2");
}

TEST(JinjaFilters, Tojson) {
  EXPECT_EQ(render(R"({{ {"a": 1, "b": [1, 2]}|tojson }})"), R"({"a": 1, "b": [1, 2]})");
  EXPECT_EQ(render(R"({{ {"a": 1, "b": [1, 2]}|tojson(indent=2) }})"), "{\n  \"a\": 1,\n  \"b\": [\n    1,\n    2\n  ]\n}");
  EXPECT_EQ(render("{{ 'e\xC3\xA9\\n\"'|tojson }}|{{ [] | tojson(indent=2) }}|{{ 1.0|tojson }}"), "\"e\xC3\xA9\\n\\\"\"|[]|1.0");
  EXPECT_EQ(error_code("{{ x|tojson }}"), "TypeError");
}

TEST(JinjaFilters, Numbers) {
  EXPECT_EQ(render(R"({{ 2.5|round }}|{{ 3.5|round }}|{{ 2.675|round(2) }}|{{ 10|round }}|{{ 2.5|int }}|{{ "42.7"|int }})"),
            "2.0|4.0|2.67|10|2|42");
  EXPECT_EQ(render(R"({{ "x"|int(5) }}|{{ "3.5"|float }}|{{ -3|abs }})"), "5|3.5|3");
}

TEST(JinjaFilters, Sequences) {
  EXPECT_EQ(render(R"({{ [3,1,2]|sort }}|{{ ["b","A","c"]|sort }}|{{ ["b","A","a"]|unique|list }})"),
            "[1, 2, 3]|['A', 'b', 'c']|['b', 'A']");
  EXPECT_EQ(render(R"({{ {"b":1,"a":2}|dictsort }}|{{ [1,2,3]|first }}{{ [1,2,3]|last }}|{{ []|first }}|)"),
            "[('a', 2), ('b', 1)]|13||");
  EXPECT_EQ(render(R"({{ [1,2,3]|map("string")|join(",") }}|{{ [{"a":1},{"b":2}]|selectattr("a")|list }})"),
            "1,2,3|[{'a': 1}]");
  EXPECT_EQ(render(R"({{ [1,2,3]|select("odd")|list }}|{{ [1,2,3]|reject("equalto", 2)|list }})"), "[1, 3]|[1, 3]");
  EXPECT_EQ(render(R"({{ [{"t":"a"},{"t":"b"}]|map(attribute="t")|list }})"), "['a', 'b']");
  EXPECT_EQ(render("{{ {'a': 1}|items|list }}"), "[('a', 1)]");
  EXPECT_EQ(render("{% for k, v in 5|items %}{% endfor %}"), "ERROR[TypeError]: Can only get item pairs from a mapping.");
}

TEST(JinjaFilters, DefaultFilter) {
  EXPECT_EQ(render(R"({{ x|default("d") }}|{{ ""|default("d") }}|{{ ""|default("d", true) }}|{{ x|d(1) }})"), "d||d|1");
}

TEST(JinjaTests, TypeAndValueTests) {
  EXPECT_EQ(render(R"({{ "x" is string }}{{ 1 is number }}{{ true is number }}{{ {} is mapping }}{{ "a" is iterable }})"),
            "TrueTrueTrueTrueTrue");
  EXPECT_EQ(render("{{ 1 is iterable }}{{ none is none }}{{ 4 is divisibleby 2 }}{{ x is sequence }}{{ x is defined }}"),
            "FalseTrueTrueTrueFalse");
  EXPECT_EQ(render("{{ 3 is odd }}{{ 1 is sameas true }}{{ 'a' is in 'abc' }}{{ 2 is gt 1 }}"), "TrueFalseTrueTrue");
}

TEST(JinjaMethods, PythonStringMethods) {
  EXPECT_EQ(render(R"({{ "xxhixx".strip("x") }}|{{ "a,b,,c".split(",") }}|{{ " a  b ".split() }}|{{ "a b c".split(" ", 1) }})"),
            "hi|['a', 'b', '', 'c']|['a', 'b']|['a', 'b c']");
  EXPECT_EQ(render(R"({{ "a b c".rsplit(" ", 1) }}|{{ "hello world".title() }}|{{ "o'neil".title() }})"),
            "['a b', 'c']|Hello World|O'Neil");
  EXPECT_EQ(render(R"({{ "abc".startswith(("x", "a")) }}|{{ "abc".endswith("bc") }}|{{ "abc".find("c") }})"),
            "True|True|2");
  EXPECT_EQ(render(R"({{ "%s-%d" % ("a", 3) }}|{{ "{} {}".format(1, "x") }}|{{ "a<b>".replace("<", "[") }})"),
            "a-3|1 x|a[b>");
  EXPECT_EQ(render(R"({{ d.get("a") }}|{{ d.get("z", 0) }}|{{ d.keys()|list }})", R"({"d": {"a": 1}})"), "1|0|['a']");
}

TEST(JinjaGlobals, RaiseExceptionAndStrftimeNow) {
  EXPECT_EQ(render("{{ raise_exception('boom') }}"), "ERROR[TemplateError]: boom");
  EXPECT_EQ(render(R"({{ strftime_now("%Y-%m-%d %H:%M %A %b") }})"), "2025-01-15 10:30 Wednesday Jan");
  EXPECT_EQ(render("{{ range(3)|list }}|{{ range(1, 7, 2)|list }}|{{ dict(a=1) }}"), "[0, 1, 2]|[1, 3, 5]|{'a': 1}");
  EXPECT_EQ(error_code("{{ range(1000000)|length }}"), "OverflowError");
}

// ---- errors and limits ----------------------------------------------------------------------------------

TEST(JinjaErrors, SyntaxErrorsAreReported) {
  EXPECT_EQ(error_code("{{ foo( }}"), "TemplateSyntaxError");
  EXPECT_EQ(error_code("{% if x %}"), "TemplateSyntaxError");
  EXPECT_EQ(error_code("{% endfor %}"), "TemplateSyntaxError");
  EXPECT_EQ(error_code("{# open"), "TemplateSyntaxError");
  EXPECT_EQ(error_code("{{ 'open }}"), "TemplateSyntaxError");
  EXPECT_EQ(error_code("{% include 'x' %}"), "TemplateSyntaxError");
}

TEST(JinjaErrors, UnknownFiltersFailAtParseTimeExceptInsideIf) {
  EXPECT_EQ(error_code("{{ x | nosuchfilter }}"), "TemplateAssertionError");
  EXPECT_EQ(render("{% if false %}{{ x | nosuchfilter }}{% endif %}ok"), "ok");
  EXPECT_TRUE(fails("{% if true %}{{ x | nosuchfilter }}{% endif %}"));
}

TEST(JinjaLimits, DeepNestingIsRefusedNotACrash) {
  EXPECT_EQ(error_code("{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}"), "TemplateSyntaxError");
  EXPECT_EQ(error_code("{{ " + std::string(5000, '[') + std::string(5000, ']') + " }}"), "TemplateSyntaxError");
  std::string chain = "{{ 1";
  for (int i = 0; i < 20000; ++i) chain += " + 1";
  EXPECT_EQ(error_code(chain + " }}"), "TemplateSyntaxError");
  std::string ifs;
  for (int i = 0; i < 5000; ++i) ifs += "{% if true %}";
  EXPECT_EQ(error_code(ifs), "TemplateSyntaxError");
}

TEST(JinjaLimits, RunawayRecursionOutputAndWorkAreBounded) {
  EXPECT_EQ(error_code("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}"), "LimitExceeded");
  RenderOptions small = fixed_clock();
  small.max_output_bytes = 1000;
  EXPECT_EQ(render("{% for i in range(2000) %}x{% endfor %}", "{}", small).substr(0, 19), "ERROR[LimitExceeded");
  EXPECT_EQ(render("{{ 'x' * 5000 }}", "{}", small).substr(0, 19), "ERROR[MemoryError]:");
  small.max_steps = 10000;
  EXPECT_EQ(render("{% for i in range(100) %}{% for j in range(100) %}{% endfor %}{% endfor %}", "{}", small).substr(0, 19),
            "ERROR[LimitExceeded");
  EXPECT_EQ(error_code("{% set ns = namespace(v=[]) %}{% for i in range(1000) %}{% set ns.v = [ns.v] %}{% endfor %}"),
            "LimitExceeded");
  // A namespace that holds itself prints as Python prints it, and is freed after the render (LeakSanitizer).
  EXPECT_EQ(render("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}"), "<Namespace {'me': <Namespace {...}>}>");
}

TEST(JinjaLimits, DeepJsonIsRefused) {
  std::string deep(1000, '[');
  deep += std::string(1000, ']');
  EXPECT_FALSE(Value::from_json(nlohmann::ordered_json::parse(deep)).ok());
}

}  // namespace
}  // namespace pagoda::jinja
