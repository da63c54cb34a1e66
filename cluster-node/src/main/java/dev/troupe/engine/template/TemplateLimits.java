package dev.troupe.engine.template;

import java.time.Duration;

/**
 * What one template may cost: every resource a template can consume is bounded here, so that a
 * template sent with a request is data, never a threat to the node. A breach is a {@link
 * dev.troupe.engine.ChatTemplate.TemplateException} naming the limit; nothing is allocated first.
 *
 * <p>The defaults sit far above what real chat templates use (Qwen3, Llama 3.x, DeepSeek-V3, Gemma
 * 3 render a 100-message conversation in well under 1% of each) and at or above what Python Jinja2
 * itself can do where it has a limit of its own (its recursive parser fails at about 70 nested
 * parentheses and 50 nested blocks; Python's recursion limit of 1000 stops macro recursion at about
 * 170 calls and values nested about 1000 deep; its sandbox refuses ranges over 100,000).
 *
 * @param maxSourceChars template source length (the largest real chat templates are ~50 KB)
 * @param maxParseDepth nesting of blocks, brackets and operators while parsing (Jinja2: ~70)
 * @param maxDepth nesting while rendering, counted together like Python's recursion limit:
 *     statements, expressions, macro calls, and the values printed, compared or serialized; this
 *     also bounds the thread stack a render needs
 * @param maxSteps evaluation steps: one per statement, expression and loop iteration, plus one per
 *     64 characters or items that an operation scans, copies or compares
 * @param maxOutputChars characters of the rendered text (and of any captured block or macro output)
 * @param maxValueLength characters of one string, or items of one list or dict, that an operation
 *     may build (checked before building it)
 * @param maxAllocatedBytes estimated bytes of every string, list and output buffer the render
 *     builds, garbage included: bounds the render's memory whatever it keeps alive
 * @param maxRenderTime wall-clock time of one render
 */
public record TemplateLimits(
    int maxSourceChars,
    int maxParseDepth,
    int maxDepth,
    long maxSteps,
    int maxOutputChars,
    int maxValueLength,
    long maxAllocatedBytes,
    Duration maxRenderTime) {

  /** The limits every template gets unless its owner chooses others. */
  public static final TemplateLimits DEFAULT =
      new TemplateLimits(
          1 << 20, 100, 500, 5_000_000, 16 << 20, 16 << 20, 256L << 20, Duration.ofSeconds(5));

  public TemplateLimits {
    if (maxSourceChars < 1
        || maxParseDepth < 1
        || maxDepth < 1
        || maxSteps < 1
        || maxOutputChars < 1
        || maxValueLength < 1
        || maxAllocatedBytes < 1)
      throw new IllegalArgumentException("template limits must be positive");
    if (maxRenderTime == null || maxRenderTime.isNegative() || maxRenderTime.isZero())
      throw new IllegalArgumentException("maxRenderTime must be positive");
  }

  public TemplateLimits withMaxSteps(long steps) {
    return new TemplateLimits(
        maxSourceChars,
        maxParseDepth,
        maxDepth,
        steps,
        maxOutputChars,
        maxValueLength,
        maxAllocatedBytes,
        maxRenderTime);
  }

  public TemplateLimits withMaxOutputChars(int chars) {
    return new TemplateLimits(
        maxSourceChars,
        maxParseDepth,
        maxDepth,
        maxSteps,
        chars,
        maxValueLength,
        maxAllocatedBytes,
        maxRenderTime);
  }

  public TemplateLimits withMaxAllocatedBytes(long bytes) {
    return new TemplateLimits(
        maxSourceChars,
        maxParseDepth,
        maxDepth,
        maxSteps,
        maxOutputChars,
        maxValueLength,
        bytes,
        maxRenderTime);
  }

  public TemplateLimits withMaxRenderTime(Duration time) {
    return new TemplateLimits(
        maxSourceChars,
        maxParseDepth,
        maxDepth,
        maxSteps,
        maxOutputChars,
        maxValueLength,
        maxAllocatedBytes,
        time);
  }

  public TemplateLimits withMaxDepth(int depth) {
    return new TemplateLimits(
        maxSourceChars,
        maxParseDepth,
        depth,
        maxSteps,
        maxOutputChars,
        maxValueLength,
        maxAllocatedBytes,
        maxRenderTime);
  }
}
