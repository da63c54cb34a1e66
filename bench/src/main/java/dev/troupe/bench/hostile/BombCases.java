package dev.troupe.bench.hostile;

import static dev.troupe.bench.hostile.Case.any;
import static dev.troupe.bench.hostile.Case.ok;
import static dev.troupe.bench.hostile.Case.refused;

import java.util.ArrayList;
import java.util.List;

/** Template, regex, JSON-schema and grammar bombs. */
final class BombCases {
  private BombCases() {}

  private static Case.Action chat(String extra) {
    return t -> t.post("/v1/chat/completions", Bodies.chat(t, extra));
  }

  private static String q(String s) {
    return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
  }

  static List<Case> templates() {
    String f = "template bombs";
    List<Case> c = new ArrayList<>();
    String[] templates = {
      "{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}",
      "{% for i in range(1000000000) %}{% endfor %}",
      "{{ 'a' * 1000000000 }}",
      "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
      "{{ ''.__class__.__mro__ }}",
      "{{ cycler.__init__.__globals__ }}",
      "{% include 'x' %}",
      "{% import 'x' as y %}",
      "{% set x = [] %}{% for i in range(10000000) %}{% set _ = x.append(i) %}{% endfor %}",
      "{{ " + "(".repeat(5000) + "1" + ")".repeat(5000) + " }}",
      "{% if %}",
      "{{ messages[0]['content'] * 100000000 }}",
      "{{ raise_exception('boom') }}",
      "{% set d = {} %}{% for i in range(1000000) %}{% set _ = d.update({i|string: i}) %}{% endfor %}",
      "{{ range(10**9)|list|length }}",
      "{{ 'x'|center(1000000000) }}",
      "{% for m in messages %}" + "{% for m2 in messages %}".repeat(50) + "{% endfor %}".repeat(51),
      "{{ '%s' % ('a' * 100000000) }}",
    };
    for (String tpl : templates)
      c.add(
          refused(
              f,
              tpl.substring(0, Math.min(50, tpl.length())),
              chat(",\"chat_template\":" + q(tpl))));
    c.add(
        any(
            f,
            "/tokenize with a recursive template",
            t ->
                t.post(
                    "/tokenize",
                    "{\"model\":\""
                        + t.model
                        + "\",\"messages\":"
                        + Bodies.MESSAGES
                        + ",\"chat_template\":"
                        + q("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}")
                        + "}")));
    c.add(
        refused(
            f,
            "chat_template_kwargs nested 1,000 deep",
            chat(",\"chat_template_kwargs\":{\"a\":" + "[".repeat(990) + "]".repeat(990) + "}")));
    c.add(
        ok(
            f,
            "a plain request template",
            chat(
                ",\"chat_template\":"
                    + q("{% for m in messages %}{{ m['content'] }}{% endfor %}"))));
    return c;
  }

  static List<Case> regexes() {
    String f = "regex bombs";
    List<Case> c = new ArrayList<>();
    String[] regexes = {
      "(a+)+$",
      "(x+x+)+y",
      "[ab]*a[ab]{30}",
      "a{100000}",
      "a{1000000000}",
      "(".repeat(10_000) + "a" + ")".repeat(10_000),
      "(a|b|c|d|e|f|g|h)*{1,2}",
      "[\\s\\S]*".repeat(1000),
      "((a*)*)*b",
      "\\p{L}{1,100000}",
      "(?=a)b",
      "a**",
      "[" + "a-z".repeat(10_000) + "]",
      "(" + "x|".repeat(50_000) + "y)",
    };
    for (String r : regexes)
      c.add(
          any(
              f,
              r.substring(0, Math.min(40, r.length())),
              chat(",\"structured_outputs\":{\"regex\":" + q(r) + "}")));
    c.add(ok(f, "a plain regex", chat(",\"structured_outputs\":{\"regex\":\"[0-9]{1,3}\"}")));
    return c;
  }

  static List<Case> schemas() {
    String f = "schema bombs";
    List<Case> c = new ArrayList<>();
    List<String> schemas = new ArrayList<>();
    schemas.add(
        "{\"type\":\"object\",\"properties\":{\"a\":"
            + "{\"type\":\"object\",\"properties\":{\"a\":".repeat(200)
            + "{\"type\":\"string\"}"
            + "}}".repeat(200)
            + "}}");
    StringBuilder chain = new StringBuilder();
    for (int i = 0; i < 10_000; i++)
      chain
          .append(i == 0 ? "" : ",")
          .append("\"d")
          .append(i)
          .append("\":")
          .append(
              i + 1 < 10_000 ? "{\"$ref\":\"#/$defs/d" + (i + 1) + "\"}" : "{\"type\":\"string\"}");
    schemas.add("{\"$ref\":\"#/$defs/d0\",\"$defs\":{" + chain + "}}");
    schemas.add(
        "{\"$ref\":\"#/$defs/a\",\"$defs\":{\"a\":{\"$ref\":\"#/$defs/b\"},\"b\":{\"$ref\":\"#/$defs/a\"}}}");
    schemas.add("{\"$ref\":\"#\"}");
    schemas.add("{\"$ref\":\"http://evil.example/schema\"}");
    schemas.add("{\"$ref\":\"#/$defs/%ZZ\"}");
    schemas.add("{\"enum\":" + Bodies.array(100_000, i -> "\"v" + i + "\"") + "}");
    schemas.add("{\"type\":\"string\",\"pattern\":\"(a+)+$\"}");
    schemas.add("{\"type\":\"string\",\"minLength\":1000000000}");
    schemas.add("{\"type\":\"array\",\"minItems\":100000,\"items\":{\"type\":\"integer\"}}");
    schemas.add("{\"type\":\"integer\",\"minimum\":-1e308,\"maximum\":1e308}");
    schemas.add(
        "{\"type\":\"object\",\"properties\":"
            + Bodies.object(5000, i -> "\"p" + i + "\":{\"type\":\"string\"}")
            + ",\"required\":"
            + Bodies.array(5000, i -> "\"p" + i + "\"")
            + "}");
    schemas.add("{\"anyOf\":" + Bodies.array(5000, i -> "{\"const\":" + i + "}") + "}");
    schemas.add("{\"type\":\"nope\"}");
    schemas.add("[]");
    schemas.add("{\"type\":\"string\",\"format\":\"date-time\",\"maxLength\":1000000}");
    schemas.add("{\"not\":{}}");
    schemas.add(
        "{\"type\":\"object\",\"additionalProperties\":"
            + "{\"type\":\"object\",\"additionalProperties\":".repeat(100)
            + "true"
            + "}".repeat(100)
            + "}");
    for (String s : schemas)
      c.add(
          any(
              f,
              "json_schema " + s.substring(0, Math.min(50, s.length())),
              chat(
                  ",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"x\",\"schema\":"
                      + s
                      + "}}")));
    c.add(
        refused(
            f,
            "a 10,000-long $ref chain is a 400",
            chat(
                ",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"x\",\"schema\":"
                    + schemas.get(1)
                    + "}}")));
    c.add(
        any(
            f,
            "a tool with a 10,000-long $ref chain, required",
            chat(
                ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":"
                    + schemas.get(1)
                    + "}}],\"tool_choice\":\"required\"")));
    c.add(
        refused(
            f,
            "tool_choice naming a missing tool",
            chat(
                ",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":{}}}],\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"g\"}}")));
    c.add(
        ok(
            f,
            "a plain schema",
            chat(
                ",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"x\",\"schema\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"}}}}}")));
    return c;
  }

  static List<Case> grammars() {
    String f = "grammar bombs";
    List<Case> c = new ArrayList<>();
    StringBuilder rules = new StringBuilder("root ::= r0\n");
    for (int i = 0; i < 20_000; i++)
      rules.append("r").append(i).append(" ::= \"a\" r").append(i + 1).append(" | \"b\"\n");
    rules.append("r20000 ::= \"c\"\n");
    String[] grammars = {
      "root ::= root",
      "root ::= root \"a\" | \"b\"",
      "root ::= x",
      "root ::= \"a\"{1000000}",
      "root ::= (" + "\"a\" ".repeat(100_000) + ")",
      rules.toString(),
      "root ::= [^\\x00-\\U0010FFFF]",
      "root ::= " + "(".repeat(5000) + "\"a\"" + ")".repeat(5000),
      "root ::= \"\\ud800\"",
      "start: start \"a\" | \"b\"",
      "start: /(a+)+$/",
    };
    for (String g : grammars)
      c.add(
          any(
              f,
              g.substring(0, Math.min(40, g.length())).replace("\n", " "),
              chat(",\"structured_outputs\":{\"grammar\":" + q(g) + "}")));
    c.add(
        refused(
            f,
            "choice of 100,000 options",
            chat(
                ",\"structured_outputs\":{\"choice\":"
                    + Bodies.array(100_000, i -> "\"c" + i + "\"")
                    + "}")));
    c.add(
        any(
            f,
            "structural tag with 10,000 triggers",
            chat(
                ",\"response_format\":{\"type\":\"structural_tag\",\"structures\":[{\"begin\":\"<a>\",\"schema\":{},\"end\":\"</a>\"}],\"triggers\":"
                    + Bodies.array(10_000, i -> "\"<t" + i + "\"")
                    + "}")));
    c.add(
        ok(
            f,
            "a plain grammar",
            chat(",\"structured_outputs\":{\"grammar\":\"root ::= \\\"yes\\\" | \\\"no\\\"\"}")));
    return c;
  }
}
