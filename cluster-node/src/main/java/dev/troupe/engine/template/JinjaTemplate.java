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
 * objects), mutating list/dict methods are refused, and parsing and every render are bounded in
 * every resource by {@link TemplateLimits}. Whatever a template holds, {@link #compile} and {@link
 * #render} either succeed or throw a {@link TemplateException}: no other exception, and no {@code
 * StackOverflowError}, escapes them.
 *
 * <p>Immutable and thread-safe; each {@link #render} evaluates independently. A render needs at
 * most about 400 KB of thread stack with the default limits (interpreted frames; see {@code
 * JinjaLimitsTest}); run renders on threads with the JVM's default 1 MB stacks or larger.
 */
public final class JinjaTemplate {
  /** Default evaluation budget: far above any real chat template on a long conversation. */
  public static final long DEFAULT_MAX_STEPS = TemplateLimits.DEFAULT.maxSteps();

  public static final int DEFAULT_MAX_OUTPUT_CHARS = TemplateLimits.DEFAULT.maxOutputChars();

  private final List<Stmt> body;
  private final Clock clock;
  private final TemplateLimits limits;

  private JinjaTemplate(List<Stmt> body, Clock clock, TemplateLimits limits) {
    this.body = body;
    this.clock = clock;
    this.limits = limits;
  }

  /** Parses a template with the default limits; a syntax error names the line. */
  public static JinjaTemplate compile(String source) {
    return compile(source, TemplateLimits.DEFAULT);
  }

  /** Parses a template; a syntax error or a breached limit is a {@link TemplateException}. */
  public static JinjaTemplate compile(String source, TemplateLimits limits) {
    if (source.length() > limits.maxSourceChars())
      throw new TemplateException(
          "template of "
              + source.length()
              + " characters is over the limit of "
              + limits.maxSourceChars());
    try {
      return new JinjaTemplate(
          Parser.parse(source, limits.maxParseDepth()), Clock.systemDefaultZone(), limits);
    } catch (TemplateException e) {
      throw e;
    } catch (StackOverflowError e) {
      // Not expected (the parse depth limit keeps the stack small): a last line of defence.
      throw new TemplateException("template nested too deeply for this thread's stack");
    } catch (RuntimeException e) {
      throw new TemplateException("template syntax error: " + e, e);
    }
  }

  /** The same template with {@code strftime_now} reading this clock (tests fix the date). */
  public JinjaTemplate withClock(Clock clock) {
    return new JinjaTemplate(body, clock, limits);
  }

  /** The same template rendered under other limits (the source limits applied at compile). */
  public JinjaTemplate withLimits(TemplateLimits limits) {
    return new JinjaTemplate(body, clock, limits);
  }

  public TemplateLimits limits() {
    return limits;
  }

  /** Renders with JSON-like variables (String, Number, Boolean, null, List, Map). */
  public String render(Map<String, Object> variables) {
    Budget budget = new Budget(limits);
    return new Interpreter(new Builtins(clock, budget)).render(body, variables);
  }
}
