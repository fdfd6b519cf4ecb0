package dev.sluice;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sluice.spi.StoreProtocol.Kind;
import dev.sluice.spi.StoreProtocol.Operation;
import org.junit.jupiter.api.Test;

/** The engine's int codes (switch labels) are the protocol's enum codes. */
class ProtocolCodesTest {
  @Test
  void engineOperationCodes_areTheProtocols() {
    assertThat(new int[] {Engine.TRY_ACQUIRE, Engine.CHECK, Engine.FILL_UP, Engine.RESERVE,
        Engine.LEASE, Engine.RELEASE})
        .containsExactly(Operation.TRY_ACQUIRE.code(), Operation.CHECK.code(),
            Operation.FILL_UP.code(), Operation.RESERVE.code(), Operation.LEASE.code(),
            Operation.RELEASE.code());
  }

  @Test
  void compiledKindCodes_areTheProtocols() {
    assertThat(new int[] {CompiledLimit.BUCKET, CompiledLimit.FIXED, CompiledLimit.SLIDING})
        .containsExactly(Kind.BUCKET.code(), Kind.FIXED_WINDOW.code(),
            Kind.SLIDING_WINDOW.code());
  }
}
