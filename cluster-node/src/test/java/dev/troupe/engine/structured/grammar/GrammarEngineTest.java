package dev.troupe.engine.structured.grammar;

import static dev.troupe.engine.structured.grammar.Expr.alt;
import static dev.troupe.engine.structured.grammar.Expr.chars;
import static dev.troupe.engine.structured.grammar.Expr.literal;
import static dev.troupe.engine.structured.grammar.Expr.optional;
import static dev.troupe.engine.structured.grammar.Expr.plus;
import static dev.troupe.engine.structured.grammar.Expr.ref;
import static dev.troupe.engine.structured.grammar.Expr.repeat;
import static dev.troupe.engine.structured.grammar.Expr.seq;
import static dev.troupe.engine.structured.grammar.Expr.star;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

class GrammarEngineTest {

  private static final ToyVocab VOCAB =
      ToyVocab.asciiPlus(
          "he", "hel", "hello", "lo", "\",", "\"}", "\":", "ab\",", "()", "((", "))", "é",
          "\u00e9x", "{\"", "\"a\"");

  private static CompiledGrammar compile(Grammar g) {
    return CompiledGrammar.compile(g, VOCAB.vocabulary, Limits.defaults());
  }

  private static Grammar rules(Object... nameBody) {
    Map<String, Expr> m = new LinkedHashMap<>();
    for (int i = 0; i < nameBody.length; i += 2)
      m.put((String) nameBody[i], (Expr) nameBody[i + 1]);
    return new Grammar(m, (String) nameBody[0]);
  }

  private static int id(String token) {
    return VOCAB.tokens.indexOf(token);
  }

  @Test
  void literalAllowsExactlyItsPrefixTokensThenOnlyStop() {
    CompiledGrammar g = compile(Grammar.of(literal("hello")));
    GrammarMatcher m = g.newMatcher();
    assertTrue(m.isAllowed(id("h")));
    assertTrue(m.isAllowed(id("he")));
    assertTrue(m.isAllowed(id("hello")));
    assertFalse(m.isAllowed(id("lo")));
    assertFalse(m.isAllowed(VOCAB.stop));
    assertFalse(m.isAllowed(VOCAB.stop + 2), "ids beyond the tokenizer are never allowed");
    assertTrue(m.accept(id("hel")));
    assertFalse(m.accept(id("h")));
    assertTrue(m.accept(id("lo")));
    assertTrue(m.isComplete());
    assertTrue(m.isAllowed(VOCAB.stop));
    assertTrue(m.accept(VOCAB.stop));
    assertTrue(m.isTerminated());
  }

  @Test
  void masksEqualBruteForceOnRecursiveGrammars() {
    // balanced parentheses, JSON-like strings crossing rule boundaries, right recursion
    List<Grammar> grammars =
        List.of(
            rules(
                "root",
                alt(seq(literal("("), ref("root"), literal(")"), ref("root")), literal(""))),
            rules(
                "root",
                    seq(
                        literal("{"),
                        ref("str"),
                        literal(":"),
                        ref("str"),
                        star(seq(literal(","), ref("str"))),
                        literal("}")),
                "str", seq(literal("\""), star(chars('a', 'z')), literal("\""))),
            rules("root", alt(seq(literal("a"), ref("root")), literal("b"))),
            rules(
                "root", seq(ref("item"), star(seq(literal(" "), ref("item")))),
                "item", alt(ref("word"), seq(literal("("), ref("root"), literal(")"))),
                "word", plus(chars('a', 'e', 'h', 'l', 'o', 'o'))),
            rules(
                "root",
                seq(optional(ref("ws")), literal("x"), optional(ref("ws"))),
                "ws",
                plus(literal(" "))),
            rules("root", seq(repeat(chars(0x80, 0x7FF), 1, 3), literal("x"))));
    Random r = new Random(7);
    for (Grammar gr : grammars) {
      CompiledGrammar g = compile(gr);
      for (int i = 0; i < 15; i++) Walks.checkMasksAlongWalk(g, r, 25);
    }
  }

  @Test
  void walksProduceOnlyStringsOfTheLanguage() {
    CompiledGrammar g =
        compile(
            rules(
                "root",
                alt(seq(literal("("), ref("root"), literal(")"), ref("root")), literal(""))));
    Random r = new Random(1);
    int finished = 0;
    for (int i = 0; i < 300; i++) {
      Walks.Walk w = Walks.walk(g, r, 60, 0.3);
      String s = w.text();
      assertTrue(balancedPrefix(s), s);
      if (w.terminated()) {
        finished++;
        assertTrue(balanced(s), s);
        assertTrue(g.automaton().matches(w.bytes()));
      }
    }
    assertTrue(finished > 50);
  }

  @Test
  void rightRecursionDoesNotGrowTheStack() {
    CompiledGrammar g = compile(rules("root", alt(seq(literal("a"), ref("root")), literal(""))));
    GrammarMatcher m = g.newMatcher();
    for (int i = 0; i < 20_000; i++) assertTrue(m.accept(id("a")));
    assertTrue(m.canTerminate());
  }

  @Test
  void deepNestingWorks() {
    CompiledGrammar g =
        compile(rules("root", alt(seq(literal("("), ref("root"), literal(")")), literal("x"))));
    GrammarMatcher m = g.newMatcher();
    for (int i = 0; i < 5000; i++) assertTrue(m.accept(id("((")));
    assertTrue(m.accept(id("x")));
    assertFalse(m.canTerminate());
    for (int i = 0; i < 5000; i++) assertTrue(m.accept(id("))")));
    assertTrue(m.isComplete());
  }

  @Test
  void rollbackAndForkRestoreState() {
    CompiledGrammar g = compile(Grammar.of(alt(literal("hello"), literal("help"))));
    GrammarMatcher m = g.newMatcher();
    assertTrue(m.accept(id("hel")));
    GrammarMatcher f = m.fork();
    assertTrue(m.accept(id("lo")));
    assertTrue(m.isComplete());
    assertTrue(f.accept(id("p")));
    assertTrue(f.isComplete());
    m.rollback(1);
    assertFalse(m.canTerminate());
    assertTrue(m.accept(id("p")));
    m.rollback(2);
    assertEquals(0, m.acceptedTokens());
    assertTrue(m.isAllowed(id("hello")));
  }

  @Test
  void invalidGrammarsAreRefused() {
    assertThrows(
        GrammarException.class, () -> compile(rules("root", seq(ref("root"), literal("a")))));
    assertThrows(
        GrammarException.class,
        () ->
            compile(
                rules(
                    "root", seq(optional(ref("e")), ref("root"), literal("a")), "e", literal("b"))),
        "hidden left recursion through a nullable prefix");
    assertThrows(GrammarException.class, () -> compile(rules("root", ref("nope"))));
    assertThrows(
        GrammarException.class, () -> compile(rules("root", seq(literal("x"), ref("root")))));
  }

  @Test
  void exponentialDeterminizationHitsTheBound() {
    // (a|b)* a (a|b){20}: the DFA needs 2^21 states
    Expr ab = chars('a', 'b');
    Grammar g = Grammar.of(seq(star(ab), literal("a"), repeat(ab, 20, 20)));
    GrammarException e =
        assertThrows(
            GrammarException.TooLarge.class,
            () ->
                CompiledGrammar.compile(g, VOCAB.vocabulary, new Limits(10_000, 5_000, 1L << 30)));
    assertTrue(e.getMessage().contains("DFA states"), e.getMessage());
  }

  @Test
  void utf8RangesCoverExactlyTheCodePoints() {
    Random r = new Random(3);
    for (int trial = 0; trial < 200; trial++) {
      int lo = r.nextInt(0x10FFFF);
      int hi = Math.min(0x10FFFF, lo + r.nextInt(trial % 2 == 0 ? 300 : 0x30000));
      Automaton a = AutomatonCompiler.compile(Grammar.of(chars(lo, hi)), Limits.defaults());
      for (int k = 0; k < 50; k++) {
        int cp = r.nextInt(0x110000);
        if (cp >= 0xD800 && cp <= 0xDFFF) continue;
        byte[] b = new String(Character.toChars(cp)).getBytes(StandardCharsets.UTF_8);
        assertEquals(cp >= lo && cp <= hi, a.matches(b), "cp " + cp + " in " + lo + ".." + hi);
      }
      int inside = lo + r.nextInt(hi - lo + 1);
      if (inside < 0xD800 || inside > 0xDFFF)
        assertTrue(
            a.matches(new String(Character.toChars(inside)).getBytes(StandardCharsets.UTF_8)));
      assertFalse(a.matches(new byte[] {(byte) 0xC0, (byte) 0x80}), "overlong encodings never");
    }
  }

  private static boolean balancedPrefix(String s) {
    int depth = 0;
    for (char c : s.toCharArray()) {
      depth += c == '(' ? 1 : c == ')' ? -1 : 100;
      if (depth < 0 || depth >= 100) return false;
    }
    return true;
  }

  private static boolean balanced(String s) {
    return balancedPrefix(s) && s.chars().filter(c -> c == '(').count() * 2 == s.length();
  }
}
