package dev.sluice.server;

/** The modes of {@code /v1/check}. */
enum Mode {
  ENFORCE("enforce"), PEEK("peek"), FILL_UP("fill-up"), RESERVE("reserve");

  final String wire;

  Mode(String wire) {
    this.wire = wire;
  }

  static Mode of(String s) {
    for (Mode m : values()) {
      if (m.wire.equals(s)) {
        return m;
      }
    }
    return null;
  }
}
