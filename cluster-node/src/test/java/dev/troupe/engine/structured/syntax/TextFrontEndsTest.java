package dev.troupe.engine.structured.syntax;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.engine.structured.StructuredFixtures;
import dev.troupe.engine.structured.grammar.CompiledGrammar;
import dev.troupe.engine.structured.grammar.Expr;
import dev.troupe.engine.structured.grammar.Grammar;
import dev.troupe.engine.structured.grammar.GrammarException;
import dev.troupe.engine.structured.grammar.Limits;
import dev.troupe.engine.structured.grammar.Walks;
import dev.troupe.engine.tokenizer.HfTokenizer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Random;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Regex, GBNF and Lark front ends on the Qwen3 and Llama 3 vocabularies: walks over the masks only
 * produce strings the reference accepts ({@code java.util.regex} for regexes, the grammar's own
 * string matcher for grammars), samples are reachable token by token, bad input is refused.
 */
class TextFrontEndsTest {

  private static final List<String> REGEXES =
      List.of(
          "[a-z]{3,5}\\d{2}",
          "(cat|dog|bird)s?",
          "\\w+@\\w+\\.com",
          "-?\\d+(\\.\\d+)?",
          "^(\\([0-9]{3}\\) |[0-9]{3}-)[0-9]{3}-[0-9]{4}$",
          "(a+)+$",
          "(x+x+)+y",
          "(a|aa)+b",
          "[^\\n]{0,20}\\n",
          "(?:é|ü|中文)+",
          ".{2,4}",
          "a{0,3}b*?",
          "[\\s\\S]{1,3}\\.",
          "(?P<year>[0-9]{4})-[0-9]{2}");

  private static CompiledGrammar compile(Grammar g, String model) {
    return CompiledGrammar.compile(g, StructuredFixtures.vocabulary(model), Limits.defaults());
  }

  @ParameterizedTest
  @ValueSource(strings = {"qwen3", "llama3"})
  void regexWalksMatchJavaRegex(String model) {
    Random r = new Random(3);
    for (String regex : REGEXES) {
      Pattern ref = Pattern.compile(regex.replace("(?P<", "(?<"), Pattern.UNIX_LINES);
      CompiledGrammar g = compile(Grammar.of(RegexParser.parse(regex)), model);
      int finished = 0;
      for (int i = 0; i < 25; i++) {
        Walks.Walk w = Walks.walk(g, r, 80, 0.5, "@.\n-".getBytes(), 0.5);
        Matcher m = ref.matcher(w.text());
        if (w.terminated()) {
          finished++;
          assertTrue(m.matches(), regex + " must match " + w.text());
        } else {
          assertTrue(m.matches() || m.hitEnd(), regex + ": a prefix of some match: " + w.text());
        }
      }
      assertTrue(finished > 5, regex + " walks finish");
    }
  }

  @Test
  void regexSamplesAreReachable() {
    HfTokenizer tok = StructuredFixtures.tokenizer("qwen3");
    String[][] samples = {
      {"[a-z]{3,5}\\d{2}", "abcde42", "xyz00"},
      {"\\w+@\\w+\\.com", "john_doe@example.com"},
      {"-?\\d+(\\.\\d+)?", "-12345.678", "0"},
      {"(?:é|ü|中文)+", "中文éü中文"},
      {"(a+)+$", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}
    };
    for (String[] s : samples) {
      CompiledGrammar g = compile(Grammar.of(RegexParser.parse(s[0])), "qwen3");
      for (int i = 1; i < s.length; i++)
        assertTrue(Walks.feed(g, tok.encode(s[i], false)).canTerminate(), s[0] + " / " + s[i]);
      assertFalse(g.automaton().matches("no match!".getBytes(StandardCharsets.UTF_8)));
    }
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "(?=x)", "a{3,2}", "(abc", "(a)\\1", "*a", "[z-a]", "\\bword", "(?i)a", "a++", "[abc"
      })
  void badRegexesAreRefused(String regex) {
    GrammarException e = assertThrows(GrammarException.class, () -> RegexParser.parse(regex));
    assertTrue(e.getMessage().contains("position"), e.getMessage());
  }

  private static final String ARITHMETIC =
      """
      # one or more equations
      root  ::= (expr "=" ws term "\\n")+
      expr  ::= term ([-+*/] term)*
      term  ::= ident | num | "(" ws expr ")" ws
      ident ::= [a-z] [a-z0-9_]* ws
      num   ::= [0-9]+ ws
      ws    ::= [ \\t]*
      """;

  private static final String JSON_GBNF =
      """
      root   ::= object
      value  ::= object | array | string | number | ("true" | "false" | "null") ws
      object ::=
        "{" ws (
                string ":" ws value
          ("," ws string ":" ws value)*
        )? "}" ws
      array  ::=
        "[" ws (
                value
          ("," ws value)*
        )? "]" ws
      string ::=
        "\\"" (
          [^"\\\\\\x7F\\x00-\\x1F] |
          "\\\\" (["\\\\/bfnrt] | "u" [0-9a-fA-F]{4})
        )* "\\"" ws
      number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws
      ws ::= | " " | "\\n" [ \\t]{0,20}
      """;

  @ParameterizedTest
  @ValueSource(strings = {"qwen3", "llama3"})
  void gbnfWalksStayInTheLanguage(String model) throws Exception {
    HfTokenizer tok = StructuredFixtures.tokenizer(model);
    Random r = new Random(9);
    CompiledGrammar arith = compile(GbnfParser.parse(ARITHMETIC), model);
    CompiledGrammar json = compile(GbnfParser.parse(JSON_GBNF), model);
    var mapper = new com.fasterxml.jackson.databind.ObjectMapper();
    int finished = 0;
    for (int i = 0; i < 40; i++) {
      Walks.Walk a = Walks.walk(arith, r, 60, 0.6, "\n=".getBytes(), 0.3);
      if (a.terminated()) assertTrue(arith.automaton().matches(a.bytes()), a.text());
      else assertTrue(arith.automaton().isPrefix(a.bytes()), a.text());
      Walks.Walk j = Walks.walk(json, r, 200, 1.0, "\"}]".getBytes(), 0.6);
      if (j.terminated()) {
        finished++;
        assertTrue(mapper.readTree(j.text()).isObject(), j.text());
      }
    }
    assertTrue(finished > 10);
    assertTrue(Walks.feed(arith, tok.encode("x1 +(y*2)= 3\nz=q\n", false)).canTerminate());
    assertTrue(
        Walks.feed(json, tok.encode("{\"a\": [1, -2.5e3, \"\\u00e9\"], \"b\":{}}", false))
            .canTerminate());
  }

  @ParameterizedTest
  @ValueSource(
      strings = {
        "rule ::= \"a\"",
        "root ::= missing",
        "root ::= \"abc",
        "root ::= root \"a\"",
        "root ::= \"a\"{3,1}",
        "root ::= (= \"a\") \"b\"",
        "root ::= \"a\"\nroot ::= \"b\"",
        "root ::= [b-a]",
        "   "
      })
  void badGbnfIsRefused(String grammar) {
    assertThrows(
        GrammarException.class,
        () ->
            CompiledGrammar.compile(
                GbnfParser.parse(grammar),
                StructuredFixtures.vocabulary("qwen3"),
                Limits.defaults()));
  }

  @Test
  void larkGrammars() {
    String calc =
        """
        // a calculator
        ?start: expr
        expr: term (("+"|"-") term)*
        term: NUMBER
            | "(" expr ")"
        %import common.NUMBER
        """;
    assertTrue(LarkParser.isLikelyLark(calc));
    assertFalse(LarkParser.isLikelyLark(ARITHMETIC));
    CompiledGrammar g = compile(LarkParser.parse(calc), "qwen3");
    assertTrue(g.automaton().matches("(1.5e3+2)-.5".getBytes()));
    assertFalse(g.automaton().matches("1+".getBytes()));
    String greet =
        """
        start: greeting " " NAME
        greeting: "hello" | "hi"i
        NAME: /[a-z]+/ -> name
        """;
    CompiledGrammar h = compile(LarkParser.parse(greet), "qwen3");
    assertTrue(h.automaton().matches("HI bob".getBytes()));
    assertTrue(h.automaton().matches("hello x".getBytes()));
    assertFalse(h.automaton().matches("Hello x".getBytes()));
    Random r = new Random(4);
    for (int i = 0; i < 20; i++) {
      Walks.Walk w = Walks.walk(g, r, 30, 0.5);
      if (w.terminated()) assertTrue(g.automaton().matches(w.bytes()));
    }
    assertThrows(
        GrammarException.class, () -> LarkParser.parse("start: WS\n%import common.WS\n%ignore WS"));
    assertThrows(GrammarException.class, () -> LarkParser.parse("begin: \"a\""));
  }

  @Test
  void choicesProduceExactlyOneAlternative() {
    List<String> choices = List.of("yes", "no", "maybe \"quoted\"", "中文", "no way");
    CompiledGrammar g =
        compile(Grammar.of(Expr.alt(choices.stream().map(Expr::literal).toList())), "qwen3");
    Random r = new Random(2);
    for (int i = 0; i < 50; i++) {
      Walks.Walk w = Walks.walk(g, r, 20, 0.5);
      if (w.terminated()) assertTrue(choices.contains(w.text()), w.text());
      else assertTrue(choices.stream().anyMatch(c -> c.startsWith(w.text())), w.text());
    }
    HfTokenizer tok = StructuredFixtures.tokenizer("qwen3");
    for (String c : choices) assertTrue(Walks.feed(g, tok.encode(c, false)).canTerminate(), c);
  }

  @Test
  void structuralTagsConstrainOnlyAfterATrigger() throws Exception {
    var mapper = new com.fasterxml.jackson.databind.ObjectMapper();
    String tag =
        """
        {"type":"structural_tag","triggers":["<function="],"structures":[
          {"begin":"<function=get_weather>","schema":{"type":"object","properties":{"city":{"type":"string","maxLength":8}},"required":["city"]},"end":"</function>"},
          {"begin":"<function=get_time>","schema":{"type":"object","properties":{"tz":{"enum":["UTC","CET"]}},"required":["tz"]},"end":"</function>"}]}
        """;
    CompiledGrammar g =
        compile(
            StructuralTags.parse(mapper.readTree(tag), JsonSchemaConverter.Options.defaults()),
            "qwen3");
    HfTokenizer tok = StructuredFixtures.tokenizer("qwen3");
    // free text is unconstrained
    assertTrue(
        Walks.feed(g, tok.encode("Anything at all, even <function but not complete", false))
            .canTerminate());
    Pattern call =
        Pattern.compile("<function=(get_weather|get_time)>(\\{.*?\\})</function>", Pattern.DOTALL);
    Random r = new Random(8);
    int calls = 0;
    for (int i = 0; i < 30; i++) {
      int[] start = tok.encode("Let me check. <function=", false);
      Walks.Walk w = Walks.walk(g, start, r, 120, 0.2, "\"}<".getBytes(), 0.5);
      String text = w.text();
      int at = text.indexOf("<function=");
      while (at >= 0) {
        Matcher m = call.matcher(text);
        if (m.find(at) && m.start() == at) {
          calls++;
          var doc = mapper.readTree(m.group(2));
          if (m.group(1).equals("get_weather")) assertTrue(doc.get("city").asText().length() <= 8);
          else assertTrue(List.of("UTC", "CET").contains(doc.get("tz").asText()));
          at = text.indexOf("<function=", m.end());
        } else {
          // an unfinished call at the end of the walk
          assertFalse(w.terminated(), text);
          assertTrue(g.automaton().isPrefix(w.bytes()));
          break;
        }
      }
    }
    assertTrue(calls > 5, "calls completed: " + calls);
    assertThrows(
        GrammarException.class,
        () ->
            StructuralTags.parse(
                mapper.readTree(
                    "{\"type\":\"structural_tag\",\"format\":{\"type\":\"triggered_tags\"}}"),
                JsonSchemaConverter.Options.defaults()));
    assertThrows(
        GrammarException.class,
        () ->
            StructuralTags.parse(
                mapper.readTree(
                    "{\"structures\":[{\"begin\":\"<x>\",\"schema\":{},\"end\":\"</x>\"}],\"triggers\":[\"<y\"]}"),
                JsonSchemaConverter.Options.defaults()));
    assertEquals(0, 0);
  }
}
