package dev.troupe.engine.cpu;

import static org.bytedeco.dnnl.global.dnnl.DNNL_ARG_ATTR_SCALES;
import static org.bytedeco.dnnl.global.dnnl.DNNL_ARG_DST;
import static org.bytedeco.dnnl.global.dnnl.DNNL_ARG_SRC;
import static org.bytedeco.dnnl.global.dnnl.DNNL_ARG_WEIGHTS;

import dev.troupe.engine.model.DType;
import java.util.ArrayList;
import java.util.List;
import org.bytedeco.dnnl.IntMemoryMap;
import org.bytedeco.dnnl.engine;
import org.bytedeco.dnnl.global.dnnl.fpmath_mode;
import org.bytedeco.dnnl.matmul;
import org.bytedeco.dnnl.memory;
import org.bytedeco.dnnl.primitive_attr;
import org.bytedeco.dnnl.reorder;
import org.bytedeco.dnnl.stream;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.FloatPointer;
import org.bytedeco.javacpp.LongPointer;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.ShortPointer;

/**
 * {@link ProductBench}'s 8-bit case: {@code y [rows, out] = x [rows, in] · Wᵀ} on oneDNN's matmul
 * with Q8_0-style weights (int8, one FP32 scale per 32 input elements of a row, {@code amax /
 * 127}), the weights reordered once into the layout the primitive asks for. Three ways oneDNN
 * offers:
 *
 * <ul>
 *   <li>{@link Mode#DECOMPRESS_F32}: "weights decompression", FP32 activations, {@code fpmath_mode
 *       bf16} with {@code apply_to_int}: oneDNN widens the int8 weights (scaled) to BF16 and
 *       multiplies on the BF16 dot-product instructions;
 *   <li>{@link Mode#DECOMPRESS_BF16}: the same with the activations rounded to BF16 here first;
 *   <li>{@link Mode#INT8_GROUPED}: as llama.cpp's Q8_0: the activations quantized here to int8 per
 *       32 elements (scale {@code amax / 127}), int8 × int8 on VNNI with grouped scales on both
 *       sides (oneDNN 3.13's "int8 grouped quantization"; 3.11 has no such implementation).
 * </ul>
 *
 * Throwaway benchmark code, not the engine's: one primitive per shape and row count.
 */
final class Q8Dnnl implements AutoCloseable {
  static final int BLOCK = 32;

  enum Mode {
    DECOMPRESS_F32,
    DECOMPRESS_BF16,
    INT8_GROUPED,
    /** Timing only: u8 activations (x + 128) without the zero-point correction, wrong results. */
    INT8_GROUPED_U8
  }

  private final Mode mode;
  private final int out, in, rows;
  private final engine eng = new engine(engine.kind.cpu, 0);
  private final stream st = new stream(eng);
  private final List<Pointer> keep = new ArrayList<>();
  private final matmul mm;
  private final IntMemoryMap args = new IntMemoryMap();
  private final FloatPointer dst;
  private final FloatPointer srcF;
  private final ShortPointer srcB;
  private final BytePointer srcQ;
  private final FloatPointer srcScales;
  private final String impl;
  private final byte[] qBuf;
  private final float[] sBuf;

  /**
   * Quantizes {@code w [out, in]} (row-major) and compiles the primitive; throws if oneDNN can't.
   */
  Q8Dnnl(Mode mode, float[] w, int out, int in, int rows) {
    this.mode = mode;
    this.out = out;
    this.in = in;
    this.rows = rows;
    int groups = in / BLOCK;
    byte[] q = new byte[out * in];
    float[] scales = new float[groups * out]; // [in / 32, out]: oneDNN's K-grouped scale layout
    for (int n = 0; n < out; n++)
      for (int g = 0; g < groups; g++)
        scales[g * out + n] = quantizeBlock(w, n * in + g * BLOCK, q, n * in + g * BLOCK);

    memory.data_type srcType =
        switch (mode) {
          case DECOMPRESS_F32 -> memory.data_type.f32;
          case DECOMPRESS_BF16 -> memory.data_type.bf16;
          case INT8_GROUPED -> memory.data_type.s8;
          case INT8_GROUPED_U8 -> memory.data_type.u8;
        };
    memory.desc s = kept(desc(rows, in, srcType, memory.format_tag.ab));
    // oneDNN 3.13's grouped int8 path needs s8 × s8 compensation per (row, column), which it
    // supports only on plain [in, out] weights (N contiguous); the others pick their layout
    memory.format_tag wTag =
        mode == Mode.INT8_GROUPED ? memory.format_tag.ab : memory.format_tag.any;
    memory.desc wAny = kept(desc(in, out, memory.data_type.s8, wTag));
    memory.desc d = kept(desc(rows, out, memory.data_type.f32, memory.format_tag.ab));
    primitive_attr attr = kept(new primitive_attr());
    attr.set_scales(DNNL_ARG_WEIGHTS, (1 << 0) | (1 << 1), kept(new LongPointer(BLOCK, 1L)));
    boolean int8 = mode == Mode.INT8_GROUPED || mode == Mode.INT8_GROUPED_U8;
    if (int8) attr.set_scales(DNNL_ARG_SRC, (1 << 0) | (1 << 1), kept(new LongPointer(1L, BLOCK)));
    else attr.set_fpmath_mode(fpmath_mode.bf16, true);
    matmul.primitive_desc pd = kept(new matmul.primitive_desc(eng, s, wAny, d, attr, false));
    impl = pd.impl_info_str().getString();
    mm = kept(new matmul(pd));

    // weights: ours are [out, in] row-major = W^T [in, out] with in contiguous (tag ba)
    memory.desc wUser = kept(desc(in, out, memory.data_type.s8, memory.format_tag.ba));
    BytePointer wBytes = kept(new BytePointer(q.length));
    wBytes.put(q);
    memory wUserMem = kept(new memory(wUser, eng, wBytes));
    memory wMem = kept(new memory(kept(pd.weights_desc()), eng));
    try (reorder r = new reorder(wUserMem, wMem)) {
      r.execute(st, wUserMem, wMem);
      st._wait();
    }
    FloatPointer ws = kept(new FloatPointer(scales.length));
    ws.put(scales);
    memory.desc wsd = kept(desc(groups, out, memory.data_type.f32, memory.format_tag.ab));

    dst = kept(new FloatPointer((long) rows * out));
    srcF = mode == Mode.DECOMPRESS_F32 ? kept(new FloatPointer((long) rows * in)) : null;
    srcB = mode == Mode.DECOMPRESS_BF16 ? kept(new ShortPointer((long) rows * in)) : null;
    srcQ = int8 ? kept(new BytePointer((long) rows * in)) : null;
    srcScales = int8 ? kept(new FloatPointer((long) rows * groups)) : null;
    Pointer src = srcF != null ? srcF : srcB != null ? srcB : srcQ;
    args.put(DNNL_ARG_SRC, kept(new memory(s, eng, src)));
    args.put(DNNL_ARG_WEIGHTS, wMem);
    args.put(DNNL_ARG_DST, kept(new memory(d, eng, dst)));
    args.put(DNNL_ARG_ATTR_SCALES | DNNL_ARG_WEIGHTS, kept(new memory(wsd, eng, ws)));
    if (srcScales != null) {
      memory.desc ssd = kept(desc(rows, groups, memory.data_type.f32, memory.format_tag.ab));
      args.put(DNNL_ARG_ATTR_SCALES | DNNL_ARG_SRC, kept(new memory(ssd, eng, srcScales)));
    }
    qBuf = new byte[rows * in];
    sBuf = new float[rows * groups];
  }

  /** oneDNN's name for the implementation it picked. */
  String impl() {
    return impl;
  }

  /** {@code y [rows, out] = x [rows, in] · Wᵀ}, the activations converted as the mode says. */
  void product(float[] x, float[] y) {
    int n = rows * in;
    switch (mode) {
      case DECOMPRESS_F32 -> srcF.position(0).put(x, 0, n);
      case DECOMPRESS_BF16 -> {
        short[] b = new short[n];
        for (int i = 0; i < n; i++) b[i] = DType.floatToBf16(x[i]);
        srcB.position(0).put(b, 0, n);
      }
      case INT8_GROUPED, INT8_GROUPED_U8 -> {
        for (int i = 0; i < n; i += BLOCK) sBuf[i / BLOCK] = quantizeBlock(x, i, qBuf, i);
        if (mode == Mode.INT8_GROUPED_U8) for (int i = 0; i < n; i++) qBuf[i] += (byte) 128;
        srcQ.position(0).put(qBuf, 0, n);
        srcScales.position(0).put(sBuf, 0, sBuf.length);
      }
    }
    mm.execute(st, args);
    st._wait();
    dst.position(0).get(y, 0, rows * out);
  }

  /** Q8_0: one block of 32 to int8 with scale {@code amax / 127}; returns the scale. */
  private static float quantizeBlock(float[] v, int off, byte[] q, int qOff) {
    float amax = 0;
    for (int i = 0; i < BLOCK; i++) amax = Math.max(amax, Math.abs(v[off + i]));
    float scale = amax / 127f, inv = scale == 0 ? 0 : 1 / scale;
    for (int i = 0; i < BLOCK; i++) q[qOff + i] = (byte) Math.round(v[off + i] * inv);
    return scale;
  }

  private <P extends Pointer> P kept(P p) {
    keep.add(p);
    return p;
  }

  private static memory.desc desc(long a, long b, memory.data_type t, memory.format_tag tag) {
    return new memory.desc(new LongPointer(a, b), t, tag);
  }

  @Override
  public void close() {
    args.close();
    for (int i = keep.size() - 1; i >= 0; i--) keep.get(i).close();
    st.close();
    eng.close();
  }
}
