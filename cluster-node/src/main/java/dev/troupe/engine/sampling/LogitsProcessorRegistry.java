package dev.troupe.engine.sampling;

import dev.troupe.engine.spi.LogitsProcessor;
import dev.troupe.protocol.cluster.SamplingParams.LogitsProcessorSpec;
import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationTargetException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * Loads the custom {@link LogitsProcessor}s a request names, but only classes on the allow-list
 * from configuration: a class that is not listed is never even loaded (its static initialiser never
 * runs). Every refusal is an {@link InvalidSamplingParamsException} with {@code param} {@code
 * logits_processors}, which the gateway reports as a 400.
 */
public final class LogitsProcessorRegistry {

  private static final LogitsProcessorRegistry NONE = new LogitsProcessorRegistry(Set.of(), null);

  private final Set<String> allowed;
  private final ClassLoader loader;

  private LogitsProcessorRegistry(Collection<String> allowed, ClassLoader loader) {
    this.allowed = Set.copyOf(allowed);
    this.loader = loader;
  }

  /** A registry that refuses every custom processor (the default). */
  public static LogitsProcessorRegistry none() {
    return NONE;
  }

  /** Allows exactly these fully qualified class names, loaded through {@code loader}. */
  public static LogitsProcessorRegistry allowing(
      Collection<String> classNames, ClassLoader loader) {
    return new LogitsProcessorRegistry(classNames, loader);
  }

  /** Allows these class names, loaded through this class's loader. */
  public static LogitsProcessorRegistry allowing(Collection<String> classNames) {
    return allowing(classNames, LogitsProcessorRegistry.class.getClassLoader());
  }

  public Set<String> allowed() {
    return new TreeSet<>(allowed);
  }

  /** Fails like {@link #create} would, without constructing anything (for early validation). */
  public void check(List<LogitsProcessorSpec> specs) {
    for (LogitsProcessorSpec spec : specs) constructorFor(spec);
  }

  /** One fresh instance per spec, in request order, for one choice. */
  public List<LogitsProcessor> create(
      List<LogitsProcessorSpec> specs,
      Map<String, Object> engineXargs,
      int vocabSize,
      int choiceIndex) {
    if (specs.isEmpty()) return List.of();
    List<LogitsProcessor> out = new ArrayList<>(specs.size());
    for (LogitsProcessorSpec spec : specs) {
      Constructor<? extends LogitsProcessor> ctor = constructorFor(spec);
      try {
        if (ctor.getParameterCount() == 1) {
          out.add(
              ctor.newInstance(
                  new LogitsProcessor.Init(
                      spec.args(), spec.kwargs(), engineXargs, vocabSize, choiceIndex)));
        } else {
          out.add(ctor.newInstance());
        }
      } catch (InvocationTargetException e) {
        Throwable cause = e.getCause() == null ? e : e.getCause();
        throw new InvalidSamplingParamsException(
            "logits_processors",
            "Logits processor "
                + spec.qualname()
                + " rejected its arguments: "
                + cause.getMessage(),
            cause);
      } catch (ReflectiveOperationException e) {
        throw new InvalidSamplingParamsException(
            "logits_processors",
            "Logits processor " + spec.qualname() + " could not be constructed: " + e,
            e);
      }
    }
    return List.copyOf(out);
  }

  private Constructor<? extends LogitsProcessor> constructorFor(LogitsProcessorSpec spec) {
    String name = spec.qualname();
    if (!allowed.contains(name))
      throw new InvalidSamplingParamsException(
          "logits_processors",
          "Logits processor "
              + name
              + " is not allowed on this server"
              + (allowed.isEmpty()
                  ? " (no logits processors are configured)."
                  : "; allowed: " + new TreeSet<>(allowed) + "."));
    Class<?> cls;
    try {
      cls = Class.forName(name, true, loader);
    } catch (ClassNotFoundException | LinkageError e) {
      throw new InvalidSamplingParamsException(
          "logits_processors", "Logits processor " + name + " could not be loaded: " + e, e);
    }
    if (!LogitsProcessor.class.isAssignableFrom(cls))
      throw new InvalidSamplingParamsException(
          "logits_processors",
          "Class " + name + " does not implement " + LogitsProcessor.class.getName() + ".");
    Class<? extends LogitsProcessor> pc = cls.asSubclass(LogitsProcessor.class);
    try {
      return pc.getConstructor(LogitsProcessor.Init.class);
    } catch (NoSuchMethodException e) {
      // fall through to the no-argument constructor
    }
    if (!spec.args().isEmpty() || !spec.kwargs().isEmpty())
      throw new InvalidSamplingParamsException(
          "logits_processors",
          "Logits processor "
              + name
              + " takes no constructor arguments (it has no public constructor taking "
              + "LogitsProcessor.Init).");
    try {
      return pc.getConstructor();
    } catch (NoSuchMethodException e) {
      throw new InvalidSamplingParamsException(
          "logits_processors",
          "Logits processor "
              + name
              + " has no public constructor taking LogitsProcessor.Init"
              + " or no arguments.",
          e);
    }
  }
}
