package dev.sluice.testkit;

import dev.sluice.spi.StoreProtocol;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.Map;
import java.util.TreeMap;

/**
 * Every number {@link StoreProtocol} names for a store's script, by its Java name: the int and
 * long constants (less {@code NONE}, Java's own marker; scripts use {@code SCRIPT_NONE}) and the
 * codes of the operations and kinds by their enum names. The stores' protocol tests compare the
 * names in their Lua and SQL with these, one for one. The permit protocol's are apart
 * ({@link #permits()}).
 *
 * <p>Explained in
 * <a href="https://github.com/sluice-dev/sluice/blob/main/docs/architecture.md#modules">docs/architecture.md, "Modules"</a>.
 */
public final class ProtocolConstants {
  private ProtocolConstants() {}

  public static Map<String, Long> byName() {
    Map<String, Long> java = new TreeMap<>();
    for (Field f : StoreProtocol.class.getFields()) {
      if (Modifier.isStatic(f.getModifiers())
          && (f.getType() == int.class || f.getType() == long.class)
          && !f.getName().equals("NONE") && !f.getName().startsWith("PERMIT_")) {
        try {
          java.put(f.getName(), ((Number) f.get(null)).longValue());
        } catch (IllegalAccessException e) {
          throw new AssertionError(e);
        }
      }
    }
    for (StoreProtocol.Operation o : StoreProtocol.Operation.values()) {
      java.put(o.name(), (long) o.code());
    }
    for (StoreProtocol.Kind k : StoreProtocol.Kind.values()) {
      java.put(k.name(), (long) k.code());
    }
    return java;
  }

  /**
   * The permit protocol's numbers by name: the {@code PERMIT_ARGV_} offsets, and each
   * {@link StoreProtocol.PermitOperation}'s code as {@code PERMIT_} and its name.
   */
  public static Map<String, Long> permits() {
    Map<String, Long> java = new TreeMap<>();
    for (Field f : StoreProtocol.class.getFields()) {
      if (Modifier.isStatic(f.getModifiers()) && f.getType() == int.class
          && f.getName().startsWith("PERMIT_")) {
        try {
          java.put(f.getName(), ((Number) f.get(null)).longValue());
        } catch (IllegalAccessException e) {
          throw new AssertionError(e);
        }
      }
    }
    for (StoreProtocol.PermitOperation o : StoreProtocol.PermitOperation.values()) {
      java.put("PERMIT_" + o.name(), (long) o.code());
    }
    return java;
  }
}
