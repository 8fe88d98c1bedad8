/**
 * The payload converter of the workers' workflow bundle and of every data converter of the
 * product (`payloadConverterPath`): Temporal's default one, which also tells
 * src/shared/sealed.ts each object it made from a payload the codec decrypted (the payload's
 * `SEALED_METADATA_KEY` metadata, which the codec sets and strips). Loaded inside the
 * workflow sandbox: no Node built-ins.
 */
import { DefaultPayloadConverter, type ConverterHint, type Payload, type SerializationContext } from '@temporalio/common';
import { SEALED_METADATA_KEY, markSealed } from '../shared/sealed';

/** Temporal's default payload converter, remembering which objects were made from a sealed payload. */
class SealingPayloadConverter extends DefaultPayloadConverter {
  override fromPayload<T>(payload: Payload, context?: SerializationContext, hint?: ConverterHint<T>): T {
    const value = super.fromPayload<T>(payload, context, hint);
    if (payload.metadata?.[SEALED_METADATA_KEY] !== undefined) markSealed(value);
    return value;
  }
}

/** The converter Temporal loads from this module (the `payloadConverter` export `payloadConverterPath` names). */
export const payloadConverter = new SealingPayloadConverter();
