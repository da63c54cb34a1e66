package dev.troupe.engine.structured;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.engine.sampling.InvalidSamplingParamsException;
import dev.troupe.engine.structured.grammar.CompiledGrammar;
import dev.troupe.engine.structured.grammar.Limits;
import dev.troupe.protocol.cluster.StructuredOutputsParams;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class StructuredOutputCompilerTest {

  private static StructuredOutputCompiler compiler(GrammarCache cache) {
    return new StructuredOutputCompiler(
        StructuredFixtures.vocabulary("qwen3"), Limits.defaults(), cache);
  }

  private static void refused(StructuredOutputsParams p, String param, String messageStart) {
    InvalidSamplingParamsException e =
        assertThrows(
            InvalidSamplingParamsException.class,
            () -> compiler(new GrammarCache(8, 1 << 30)).compile(p));
    assertEquals(param, e.param());
    assertTrue(e.getMessage().startsWith(messageStart), e.getMessage());
  }

  @Test
  void invalidConstraintsGetVllmsMessagesAndTheirField() {
    refused(
        StructuredOutputsParams.json("{not json", "structured_outputs.json"),
        "structured_outputs.json",
        "Invalid JSON grammar specification.");
    refused(
        StructuredOutputsParams.json("{\"type\":\"nope\"}", "response_format"),
        "response_format",
        "Failed to transform json schema into a grammar: ");
    refused(
        StructuredOutputsParams.regex("(unclosed", "structured_outputs.regex"),
        "structured_outputs.regex",
        "Failed to transform regex into a grammar: ");
    refused(
        StructuredOutputsParams.regex("a\0b", "structured_outputs.regex"),
        "structured_outputs.regex",
        "structured_outputs.regex must not contain a NUL");
    refused(
        StructuredOutputsParams.choice(List.of(), "structured_outputs.choice"),
        "structured_outputs.choice",
        "Choice '[]' cannot be an empty list");
    refused(
        StructuredOutputsParams.grammar("root ::= x", "structured_outputs.grammar"),
        "structured_outputs.grammar",
        "Invalid grammar specification. ");
    refused(
        StructuredOutputsParams.grammar("start: x y", "structured_outputs.grammar"),
        "structured_outputs.grammar",
        "Failed to convert the grammar from Lark to EBNF.");
    refused(
        StructuredOutputsParams.grammar("  ", "structured_outputs.grammar"),
        "structured_outputs.grammar",
        "structured_outputs.grammar cannot be an empty string");
    refused(
        StructuredOutputsParams.structuralTag(
            "{\"type\":\"structural_tag\",\"format\":{}}", "response_format"),
        "response_format",
        "Invalid structural tag specification.");
    refused(
        StructuredOutputsParams.json("{}", "structured_outputs.json")
            .withJsonOptions(false, false, "(oops"),
        "structured_outputs.whitespace_pattern",
        "Failed to transform the whitespace pattern into a grammar");
  }

  @Test
  void automataBeyondTheBoundAre400sNotStalls() {
    // (a|b)*a(a|b){30}: 2^31 DFA states; refused at the state bound within milliseconds
    long t0 = System.nanoTime();
    refused(
        StructuredOutputsParams.regex("[ab]*a[ab]{30}", "structured_outputs.regex"),
        "structured_outputs.regex",
        "Failed to transform regex into a grammar: the automaton exceeds");
    refused(
        StructuredOutputsParams.regex("x{99999}y{99999}z{99999}", "structured_outputs.regex"),
        "structured_outputs.regex",
        "Failed to transform regex into a grammar: ");
    assertTrue(System.nanoTime() - t0 < 30_000_000_000L);
  }

  @Test
  void theCacheSharesGrammarsAndCompilesEachOnce() throws Exception {
    GrammarCache cache = new GrammarCache(2, 1L << 30);
    StructuredOutputCompiler c = compiler(cache);
    CompiledGrammar a =
        c.compile(StructuredOutputsParams.regex("[0-9]+", "structured_outputs.regex"));
    // the same constraint under another field name is the same grammar
    assertSame(a, c.compile(StructuredOutputsParams.regex("[0-9]+", "response_format")));
    CompiledGrammar b =
        c.compile(StructuredOutputsParams.regex("[0-9]+", "x").withJsonOptions(true, false, null));
    assertNotSame(a, b);
    c.compile(StructuredOutputsParams.choice(List.of("x"), "structured_outputs.choice"));
    // a was least recently used of three: evicted
    assertNotSame(
        a, c.compile(StructuredOutputsParams.regex("[0-9]+", "structured_outputs.regex")));
    assertEquals(2, cache.stats().entries());

    // concurrent requests for one new grammar compile it once
    GrammarCache shared = new GrammarCache(8, 1L << 30);
    AtomicInteger compiles = new AtomicInteger();
    CountDownLatch started = new CountDownLatch(1);
    ExecutorService pool = Executors.newFixedThreadPool(4);
    try {
      List<Future<CompiledGrammar>> results = new java.util.ArrayList<>();
      for (int i = 0; i < 4; i++)
        results.add(
            pool.submit(
                () ->
                    shared.get(
                        "k",
                        () -> {
                          compiles.incrementAndGet();
                          started.countDown();
                          try {
                            Thread.sleep(200);
                          } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                          }
                          return a;
                        })));
      for (Future<CompiledGrammar> f : results) assertSame(a, f.get());
      assertEquals(1, compiles.get());
    } finally {
      pool.shutdownNow();
    }
    // failures are not cached
    AtomicInteger tries = new AtomicInteger();
    for (int i = 0; i < 2; i++)
      assertThrows(
          IllegalStateException.class,
          () ->
              shared.get(
                  "bad",
                  () -> {
                    tries.incrementAndGet();
                    throw new IllegalStateException("boom");
                  }));
    assertEquals(2, tries.get());
  }

  /**
   * Issue 21: a request cancelled while its grammar compiles stops the compilation (the worker
   * interrupts its input thread), and a request waiting for the same grammar compiles it itself
   * instead of failing with the cancelled one.
   */
  @Test
  void aCancelledCompileStopsAndAWaiterCompilesItItself() throws Exception {
    StructuredOutputsParams schema =
        StructuredOutputsParams.json(
            "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}",
            "response_format");
    Thread.currentThread().interrupt();
    try {
      assertThrows(
          java.util.concurrent.CancellationException.class,
          () -> compiler(new GrammarCache(8, 1L << 30)).compile(schema));
    } finally {
      Thread.interrupted();
    }

    GrammarCache shared = new GrammarCache(8, 1L << 30);
    CompiledGrammar real = compiler(shared).compile(schema);
    CountDownLatch ownerStarted = new CountDownLatch(1);
    CountDownLatch waiterWaits = new CountDownLatch(1);
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try {
      Future<CompiledGrammar> owner =
          pool.submit(
              () ->
                  shared.get(
                      "k",
                      () -> {
                        ownerStarted.countDown();
                        try {
                          waiterWaits.await();
                          Thread.sleep(200); // the waiter is in join() by now
                        } catch (InterruptedException e) {
                          Thread.currentThread().interrupt();
                        }
                        throw new java.util.concurrent.CancellationException("cancelled");
                      }));
      ownerStarted.await();
      Future<CompiledGrammar> waiter =
          pool.submit(
              () -> {
                waiterWaits.countDown();
                return shared.get("k", () -> real);
              });
      assertThrows(java.util.concurrent.ExecutionException.class, owner::get);
      assertSame(real, waiter.get());
    } finally {
      pool.shutdownNow();
    }
  }

  private static StructuredOutputsParams refChain(int n) {
    StringBuilder defs = new StringBuilder();
    for (int i = 0; i < n; i++) {
      if (i > 0) defs.append(',');
      defs.append("\"d").append(i).append("\":");
      if (i + 1 < n) defs.append("{\"$ref\":\"#/$defs/d").append(i + 1).append("\"}");
      else defs.append("{\"type\":\"string\"}");
    }
    return StructuredOutputsParams.json(
        "{\"$ref\":\"#/$defs/d0\",\"$defs\":{" + defs + "}}", "response_format");
  }

  /**
   * Issue 21: a chain of 10,000 {@code $ref}s overflowed the compile thread's stack, which surfaced
   * as a 500 ("the worker failed while compiling", through a PatternSyntaxException that
   * java.util.regex makes of a stack overflow). A chain nests like properties do: bounded, a 400.
   */
  @Test
  void aLongRefChainIsRefusedAsTooDeepAndAShortOneCompiles() {
    compiler(new GrammarCache(8, 1L << 30)).compile(refChain(50));
    for (int n : new int[] {100, 10_000})
      refused(refChain(n), "response_format", "Failed to transform json schema into a grammar: ");
    InvalidSamplingParamsException e =
        assertThrows(
            InvalidSamplingParamsException.class,
            () -> compiler(new GrammarCache(8, 1L << 30)).compile(refChain(10_000)));
    assertTrue(e.getMessage().contains("nested more than 64 levels"), e.getMessage());
  }
}
