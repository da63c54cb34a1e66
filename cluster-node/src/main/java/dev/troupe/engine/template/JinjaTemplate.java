package dev.troupe.engine.template;

import dev.troupe.engine.ChatTemplate.TemplateException;
import dev.troupe.engine.template.Ast.Stmt;
import java.time.Clock;
import java.util.List;
import java.util.Map;

/**
 * A compiled template in our own interpreter of the Jinja2 subset chat templates use, configured as
 * transformers' {@code _compile_jinja_template}: {@code trim_blocks}, {@code lstrip_blocks}, loop
 * controls, {@code raise_exception}, {@code strftime_now}, {@code tojson} with {@code
 * ensure_ascii=False}. Sandboxed by construction: templates see only plain values (no Java
 * objects), mutating list/dict methods are refused, and every render has a step and an output
 * budget.
 *
 * <p>Immutable and thread-safe; each {@link #render} evaluates independently.
 */
public final class JinjaTemplate {
  /** Default evaluation budget: far above any real chat template on a long conversation. */
  public static final long DEFAULT_MAX_STEPS = 5_000_000;

  public static final int DEFAULT_MAX_OUTPUT_CHARS = 16 * 1024 * 1024;

  private final List<Stmt> body;
  private final Clock clock;
  private final long maxSteps;
  private final int maxOutputChars;

  private JinjaTemplate(List<Stmt> body, Clock clock, long maxSteps, int maxOutputChars) {
    this.body = body;
    this.clock = clock;
    this.maxSteps = maxSteps;
    this.maxOutputChars = maxOutputChars;
  }

  /** Parses a template; a syntax error is a {@link TemplateException} naming the line. */
  public static JinjaTemplate compile(String source) {
    return new JinjaTemplate(
        Parser.parse(source),
        Clock.systemDefaultZone(),
        DEFAULT_MAX_STEPS,
        DEFAULT_MAX_OUTPUT_CHARS);
  }

  /** The same template with {@code strftime_now} reading this clock (tests fix the date). */
  public JinjaTemplate withClock(Clock clock) {
    return new JinjaTemplate(body, clock, maxSteps, maxOutputChars);
  }

  public JinjaTemplate withLimits(long maxSteps, int maxOutputChars) {
    return new JinjaTemplate(body, clock, maxSteps, maxOutputChars);
  }

  /** Renders with JSON-like variables (String, Number, Boolean, null, List, Map). */
  public String render(Map<String, Object> variables) {
    return new Interpreter(new Builtins(clock), maxSteps, maxOutputChars).render(body, variables);
  }
}
