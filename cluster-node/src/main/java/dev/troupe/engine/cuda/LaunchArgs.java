package dev.troupe.engine.cuda;

import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.PointerPointer;

/**
 * A kernel launch's arguments as {@code cuLaunchKernel} takes them: {@code kernelParams}, an array
 * of {@code void*}, entry i pointing at argument i's value. Values sit in 8-byte slots (an int or
 * float in the first 4 bytes, the rest zero), allocated once and reused at every launch: the driver
 * copies the values when it queues the launch.
 *
 * <p>The array is a {@link PointerPointer} because the bindings then pass its address as the {@code
 * void**} itself. Their other overload takes a plain {@link Pointer} marked {@code @ByPtrPtr} and
 * passes the address of a local holding the pointer: the driver then reads that local as the array,
 * and every argument of every launch is wrong (StubDriverTest shows both).
 *
 * <p>Not thread-safe: one per {@link CudaGpu}, on the runner's thread.
 */
final class LaunchArgs implements AutoCloseable {
  /** The most arguments a kernel takes here. */
  static final int MAX = 32;

  private final BytePointer slots = new BytePointer(8L * MAX);
  private final PointerPointer<Pointer> params = new PointerPointer<>(MAX);

  /** A host address as a JavaCPP pointer (position 0). */
  private static final class Address extends Pointer {
    Address(long address) {
      this.address = address;
    }
  }

  LaunchArgs() {
    for (int i = 0; i < MAX; i++) params.put(i, new Address(slots.address() + 8L * i));
  }

  /**
   * Writes {@code args} ({@link Long}: a device address or 8-byte integer; {@link Integer}; {@link
   * Float}, in the kernel's parameter order) and returns the array to pass as {@code kernelParams}.
   */
  PointerPointer<Pointer> pack(String kernel, Object... args) {
    if (args.length > MAX)
      throw new IllegalArgumentException(
          kernel + ": " + args.length + " arguments, at most " + MAX);
    for (int i = 0; i < args.length; i++) {
      Object a = args[i];
      long at = 8L * i;
      slots.putLong(at, 0);
      if (a instanceof Long l) slots.putLong(at, l);
      else if (a instanceof Integer n) slots.putInt(at, n);
      else if (a instanceof Float x) slots.putFloat(at, x);
      else
        throw new IllegalArgumentException(
            kernel
                + " argument "
                + i
                + ": unsupported type "
                + (a == null ? "null" : a.getClass().getSimpleName()));
    }
    return params;
  }

  @Override
  public void close() {
    params.close();
    slots.close();
  }
}
