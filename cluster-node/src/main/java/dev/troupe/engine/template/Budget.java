package dev.troupe.engine.template;

import dev.troupe.engine.ChatTemplate.TemplateException;

/**
 * One render's use of its {@link TemplateLimits}. Every operation that builds a string or a list
 * asks first ({@link #chars}, {@link #items}), so a breach is refused before anything is allocated;
 * every recursion goes through {@link #enter}/{@link #exit}, so the render's stack depth is bounded
 * whatever the template or its values look like. One instance per render, confined to the rendering
 * thread.
 */
final class Budget {
  /** Operations charge one step per this many characters or items they touch. */
  private static final int UNITS_PER_STEP = 64;

  /** Estimated heap bytes of one list slot and of one small string object. */
  static final int SLOT_BYTES = 8;

  static final int STRING_BYTES = 48;

  final TemplateLimits limits;
  private final long deadline;
  private long steps;
  private long units;
  private long allocated;
  private int depth;

  Budget(TemplateLimits limits) {
    this.limits = limits;
    this.deadline = System.nanoTime() + limits.maxRenderTime().toNanos();
  }

  /** One evaluation step (a statement, an expression, a loop iteration). */
  void step() {
    if (++steps > limits.maxSteps())
      throw new TemplateException(
          "template exceeded its budget of " + limits.maxSteps() + " evaluation steps");
    if ((steps & 255) == 0) checkTime();
  }

  /** Work proportional to {@code n} characters or items (a scan, a copy, a comparison). */
  void work(long n) {
    units += n;
    if (units >= UNITS_PER_STEP) {
      long s = units / UNITS_PER_STEP;
      units %= UNITS_PER_STEP;
      steps += s - 1;
      step();
    }
  }

  /** Asks to build a string of {@code n} characters. */
  void chars(long n) {
    if (n > limits.maxValueLength())
      throw new TemplateException(
          "template string of "
              + n
              + " characters is over the limit of "
              + limits.maxValueLength());
    allocate(2 * n);
    work(n);
  }

  /** Asks to build a list or dict of {@code n} items. */
  void items(long n) {
    if (n > limits.maxValueLength())
      throw new TemplateException(
          "template list of " + n + " items is over the limit of " + limits.maxValueLength());
    allocate(SLOT_BYTES * n);
    work(n);
  }

  /** Asks for {@code bytes} more (estimated) heap. */
  void allocate(long bytes) {
    allocated += bytes;
    if (allocated > limits.maxAllocatedBytes())
      throw new TemplateException(
          "template allocated more than " + (limits.maxAllocatedBytes() >> 20) + " MiB");
    if (bytes > 1 << 20) checkTime();
  }

  /** Enters one level of recursion (statement, expression, macro call, nested value). */
  void enter() {
    if (++depth > limits.maxDepth()) {
      depth--;
      throw new TemplateException("template nesting deeper than " + limits.maxDepth() + " levels");
    }
  }

  void exit() {
    depth--;
  }

  /** Checks that {@code length} more characters fit the output of one render. */
  void output(long current, long adding) {
    if (current + adding > limits.maxOutputChars())
      throw new TemplateException(
          "template output exceeded " + limits.maxOutputChars() + " characters");
    allocate(2 * adding);
  }

  private void checkTime() {
    // the worker interrupts the render of a request whose client went away
    if (Thread.currentThread().isInterrupted())
      throw new java.util.concurrent.CancellationException("rendering cancelled");
    if (System.nanoTime() - deadline > 0)
      throw new TemplateException(
          "template rendering took longer than " + limits.maxRenderTime().toMillis() + " ms");
  }
}
