package dev.troupe.engine.structured.grammar;

import static dev.troupe.engine.structured.grammar.Expr.alt;
import static dev.troupe.engine.structured.grammar.Expr.chars;
import static dev.troupe.engine.structured.grammar.Expr.literal;
import static dev.troupe.engine.structured.grammar.Expr.plus;
import static dev.troupe.engine.structured.grammar.Expr.ref;
import static dev.troupe.engine.structured.grammar.Expr.repeat;
import static dev.troupe.engine.structured.grammar.Expr.seq;
import static dev.troupe.engine.structured.grammar.Expr.star;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Keeping an output completable within its token budget: the fewest bytes that complete an output
 * equal a breadth-first search over the automaton's own byte steps, and walks that pick uniformly
 * among the tokens the budget leaves (a model that never wants to stop) always end valid within the
 * budget.
 */
class BudgetCompletionTest {

  private static final ToyVocab VOCAB =
      ToyVocab.asciiPlus("{\"", "\":", "\",", "\"}", "((", "))", "abc", "[[[", "{\"a\":{\"b\":");

  /** Recursive grammars with calls, nesting, optional parts and unbounded repetition. */
  private static final List<Grammar> GRAMMARS =
      List.of(
          rules(
              "root",
              seq(
                  literal("{"),
                  ref("str"),
                  literal(":"),
                  ref("value"),
                  star(seq(literal(","), ref("str"), literal(":"), ref("value"))),
                  literal("}")),
              "value",
              alt(ref("str"), ref("root"), plus(chars('0', '9')), literal("null")),
              "str",
              seq(literal("\""), star(chars('a', 'z')), literal("\""))),
          rules("root", alt(seq(literal("("), ref("root"), literal(")")), literal("x"))),
          rules(
              "root",
              seq(literal("["), ref("item"), star(seq(literal(","), ref("item"))), literal("]")),
              "item",
              alt(ref("root"), seq(literal("abc"), repeat(chars('a', 'z'), 2, 5)))));

  private static Grammar rules(Object... nameBody) {
    Map<String, Expr> m = new LinkedHashMap<>();
    for (int i = 0; i < nameBody.length; i += 2)
      m.put((String) nameBody[i], (Expr) nameBody[i + 1]);
    return new Grammar(m, (String) nameBody[0]);
  }

  private static CompiledGrammar compile(Grammar g) {
    return CompiledGrammar.compile(g, VOCAB.vocabulary, Limits.defaults());
  }

  /** Shortest completion by brute force: breadth-first over byte steps from the configuration. */
  private static int shortestByBfs(StackSets s, int start) {
    Map<Integer, Integer> dist = new HashMap<>();
    ArrayDeque<Integer> queue = new ArrayDeque<>();
    dist.put(start, 0);
    queue.add(start);
    while (!queue.isEmpty()) {
      int set = queue.poll();
      if (s.canTerminate(set)) return dist.get(set);
      for (int b = 0; b < 256; b++) {
        int next = s.step(set, b);
        if (next != StackSets.DEAD && dist.putIfAbsent(next, dist.get(set) + 1) == null)
          queue.add(next);
      }
    }
    throw new AssertionError("no completion");
  }

  @Test
  void bytesToCompleteIsTheShortestCompletion() {
    Random r = new Random(3);
    for (Grammar gr : GRAMMARS) {
      CompiledGrammar g = compile(gr);
      for (int walk = 0; walk < 20; walk++) {
        GrammarMatcher m = g.newMatcher();
        StackSets reference = new StackSets(g.automaton());
        int set = reference.initial();
        long[] mask = new long[TokenVocabulary.words(VOCAB.vocabulary.size())];
        for (int step = 0; step < 30; step++) {
          assertEquals(shortestByBfs(reference, set), m.bytesToComplete(), "step " + step);
          m.fillNextTokenMask(mask);
          int[] normal =
              java.util.Arrays.stream(Walks.bits(mask)).filter(t -> t != VOCAB.stop).toArray();
          if (normal.length == 0) break;
          int pick = normal[r.nextInt(normal.length)];
          assertTrue(m.accept(pick));
          set = reference.steps(set, VOCAB.vocabulary.bytes(pick));
        }
      }
    }
  }

  @Test
  void walksThatNeverChooseToStopEndValidWithinTheirBudget() {
    Random r = new Random(11);
    for (Grammar gr : GRAMMARS) {
      CompiledGrammar g = compile(gr);
      int shortest = g.newMatcher().bytesToComplete();
      for (int budget : new int[] {shortest + 1, shortest + 3, shortest + 10, 40, 80}) {
        for (int walk = 0; walk < 25; walk++) {
          GrammarMatcher m = g.newMatcher();
          ByteArrayOutputStream out = new ByteArrayOutputStream();
          long[] mask = new long[TokenVocabulary.words(VOCAB.vocabulary.size())];
          int used = 0;
          while (!m.isTerminated()) {
            assertTrue(used < budget, "budget " + budget + " exceeded: " + out);
            m.fillNextTokenMask(mask);
            m.restrictToBudget(mask, budget - used);
            // never stop while anything else is allowed: the model that wanders
            int[] normal =
                java.util.Arrays.stream(Walks.bits(mask)).filter(t -> t != VOCAB.stop).toArray();
            int pick = normal.length > 0 ? normal[r.nextInt(normal.length)] : VOCAB.stop;
            assertTrue(m.accept(pick));
            if (pick != VOCAB.stop) out.writeBytes(VOCAB.vocabulary.bytes(pick));
            used++;
          }
          assertTrue(g.automaton().matches(out.toByteArray()), out.toString());
        }
      }
    }
  }

  @Test
  void aBudgetTooSmallToCompleteChangesNothing() {
    CompiledGrammar g = compile(GRAMMARS.get(0));
    GrammarMatcher m = g.newMatcher();
    int shortest = m.bytesToComplete();
    assertEquals(6, shortest, "{\"\":0}");
    long[] mask = new long[TokenVocabulary.words(VOCAB.vocabulary.size())];
    m.fillNextTokenMask(mask);
    long[] before = mask.clone();
    // two tokens: no token completes `{"":0}` alone, so no output fits: nothing to steer
    assertFalse(m.restrictToBudget(mask, 2));
    assertArrayEquals(before, mask);
    assertFalse(m.restrictToBudget(mask, 1000), "a large budget leaves every token");
    assertArrayEquals(before, mask);
    // deep inside: `{"a":{"b":` needs `""}}`-like closing; a budget of exactly that is steered
    GrammarMatcher deep = g.newMatcher();
    assertTrue(deep.accept(VOCAB.tokens.indexOf("{\"a\":{\"b\":")));
    int left = deep.bytesToComplete();
    deep.fillNextTokenMask(mask);
    assertTrue(deep.restrictToBudget(mask, left + 1));
    for (int t : Walks.bits(mask)) {
      GrammarMatcher f = deep.fork();
      assertTrue(f.accept(t));
      assertTrue(f.bytesToComplete() <= left - 1, VOCAB.tokens.get(t));
    }
  }
}
