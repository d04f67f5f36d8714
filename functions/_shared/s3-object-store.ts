/**
 * The {@link ObjectStore} port over S3, for the artifacts and documents buckets.
 */
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { Ai4ragError, NotFoundError } from '../../shared/src/errors.js';
import { checkObjectKey, type ObjectStore } from '../../shared/src/ports/object-store.js';

/** An S3 call failed for a reason other than a missing object. */
export class ObjectStoreError extends Ai4ragError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'ObjectStoreError';
  }
}

function isNotFound(error: unknown): boolean {
  const e = error as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e?.name === 'NoSuchKey' || e?.name === 'NotFound' || e?.$metadata?.httpStatusCode === 404;
}

/**
 * S3-backed object store. The client is injected (created once per container by the runtime), so tests pass a
 * client mocked with aws-sdk-client-mock.
 * @example const store = new S3ObjectStore(new S3Client({}), 'my-artifacts');
 */
export class S3ObjectStore implements ObjectStore {
  constructor(
    readonly client: S3Client,
    readonly bucket: string,
  ) {}

  async get(key: string): Promise<Uint8Array> {
    return (await this.getWithMetadata(key)).body;
  }

  /** One GetObject: the body and the object's user metadata (`x-amz-meta-*`, as the SDK returns it). */
  async getWithMetadata(
    key: string,
  ): Promise<{ body: Uint8Array; metadata: Record<string, string> }> {
    try {
      const out = await this.client.send(
        new GetObjectCommand({ Bucket: this.bucket, Key: checkObjectKey(key) }),
      );
      if (!out?.Body) throw new NotFoundError(`Object '${key}' has no body.`);
      return { body: await out.Body.transformToByteArray(), metadata: { ...(out.Metadata ?? {}) } };
    } catch (error) {
      if (error instanceof NotFoundError) throw error;
      if (isNotFound(error)) {
        throw new NotFoundError(`Object '${key}' does not exist.`, { cause: error });
      }
      throw new ObjectStoreError(`could not read s3://${this.bucket}/${key}`, { cause: error });
    }
  }

  async put(key: string, body: Uint8Array | string, contentType?: string): Promise<void> {
    try {
      await this.client.send(
        new PutObjectCommand({
          Bucket: this.bucket,
          Key: checkObjectKey(key),
          Body: body,
          ...(contentType && { ContentType: contentType }),
        }),
      );
    } catch (error) {
      throw new ObjectStoreError(`could not write s3://${this.bucket}/${key}`, { cause: error });
    }
  }

  async delete(key: string): Promise<void> {
    try {
      await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }));
    } catch (error) {
      if (isNotFound(error)) return;
      throw new ObjectStoreError(`could not delete s3://${this.bucket}/${key}`, { cause: error });
    }
  }

  async exists(key: string): Promise<boolean> {
    try {
      await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return true;
    } catch (error) {
      if (isNotFound(error)) return false;
      throw new ObjectStoreError(`could not check s3://${this.bucket}/${key}`, { cause: error });
    }
  }

  async list(prefix: string): Promise<string[]> {
    const keys: string[] = [];
    let token: string | undefined;
    try {
      do {
        const out = await this.client.send(
          new ListObjectsV2Command({
            Bucket: this.bucket,
            Prefix: prefix,
            ...(token && { ContinuationToken: token }),
          }),
        );
        for (const o of out.Contents ?? []) if (o.Key) keys.push(o.Key);
        token = out.IsTruncated ? out.NextContinuationToken : undefined;
      } while (token);
    } catch (error) {
      throw new ObjectStoreError(`could not list s3://${this.bucket}/${prefix}`, { cause: error });
    }
    return keys.sort();
  }
}
