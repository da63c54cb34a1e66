package dev.troupe.engine.core;

/** Package internals of the engine core that tests in other packages read. */
public final class EngineCoreAccess {
  private EngineCoreAccess() {}

  public static int promptLogitsRows(int vocabSize) {
    return EngineCore.promptLogitsRows(vocabSize);
  }
}
