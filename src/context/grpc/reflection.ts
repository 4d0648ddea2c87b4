/**
 * gRPC server reflection on 8002, v1 (`grpc.reflection.v1.ServerReflection`) and v1alpha
 * (`grpc.reflection.v1alpha.ServerReflection`), from gRPC's own protos under spec/grpc/
 * (no library implements it for connect-node). It lets `buf curl`, `grpcurl` and other
 * clients list and call the services without the .proto files.
 *
 * The descriptors served are the generated code's own (protoc-gen-es embeds each file's
 * FileDescriptorProto), with every file they import. Answers:
 * - list_services: the fully-qualified names of the services on this port;
 * - file_by_filename, file_containing_symbol (a service, method, message, field, enum or
 *   enum value): the file and its transitive imports, the file first;
 * - file_containing_extension, all_extension_numbers_of_type: from the extensions of the
 *   served files (none today: an empty list for a known message, NOT_FOUND otherwise);
 * - anything not found: an error_response with NOT_FOUND, the stream staying open.
 * v1alpha has the same messages with the same field numbers: its requests are re-read as v1
 * and the answers re-read as v1alpha.
 */
import { create, createRegistry, fromBinary, toBinary, type DescFile, type DescService, type MessageInitShape } from '@bufbuild/protobuf';
import { FileDescriptorProtoSchema } from '@bufbuild/protobuf/wkt';
import { Code, type ConnectRouter } from '@connectrpc/connect';
import * as v1 from '../../../gen/proto/grpc/reflection/v1/reflection_pb.js';
import * as v1alpha from '../../../gen/proto/grpc/reflection/v1alpha/reflection_pb.js';

type Answer = MessageInitShape<typeof v1.ServerReflectionResponseSchema>['messageResponse'];

/** The files of `services` and everything they import, by file name (e.g. `context.proto`). */
function filesOf(services: DescService[]): Map<string, DescFile> {
  const out = new Map<string, DescFile>();
  const add = (f: DescFile) => {
    const name = f.proto.name;
    if (out.has(name)) return;
    out.set(name, f);
    f.dependencies.forEach(add);
  };
  for (const s of services) add(s.file);
  return out;
}

/** A file and its transitive imports as serialized FileDescriptorProtos, the file first. */
function withImports(file: DescFile): Uint8Array[] {
  const seen = new Set<string>();
  const out: Uint8Array[] = [];
  const add = (f: DescFile) => {
    if (seen.has(f.proto.name)) return;
    seen.add(f.proto.name);
    out.push(toBinary(FileDescriptorProtoSchema, f.proto));
    f.dependencies.forEach(add);
  };
  add(file);
  return out;
}

function notFound(message: string): Answer {
  return { case: 'errorResponse', value: { errorCode: Code.NotFound, errorMessage: message } };
}

function found(file: DescFile | undefined, what: string): Answer {
  return file ? { case: 'fileDescriptorResponse', value: { fileDescriptorProto: withImports(file) } } : notFound(`${what} not found`);
}

export function registerReflection(router: ConnectRouter, services: DescService[]): void {
  const files = filesOf(services);
  const registry = createRegistry(...files.values());
  const serviceNames = services.map((s) => s.typeName).sort();

  /** The file that declares a fully-qualified symbol, or the member of one (method, field, enum value). */
  const fileOfSymbol = (symbol: string): DescFile | undefined => {
    const desc = registry.get(symbol);
    if (desc) return desc.file;
    const dot = symbol.lastIndexOf('.');
    if (dot < 0) return undefined;
    const [parentName, member] = [symbol.slice(0, dot), symbol.slice(dot + 1)];
    const parent = registry.get(parentName);
    if (parent?.kind === 'service' && parent.methods.some((m) => m.name === member)) return parent.file;
    if (parent?.kind === 'message' && (parent.fields.some((f) => f.name === member) || parent.oneofs.some((o) => o.name === member))) return parent.file;
    // Enum values are scoped beside their enum, as in C++: `pkg.VALUE` or `pkg.Message.VALUE`.
    for (const d of registry) {
      if (d.kind === 'enum' && d.typeName.slice(0, d.typeName.lastIndexOf('.')) === parentName && d.values.some((v) => v.name === member)) return d.file;
    }
    return undefined;
  };

  const answer = (req: v1.ServerReflectionRequest): MessageInitShape<typeof v1.ServerReflectionResponseSchema> => {
    const r = req.messageRequest;
    let messageResponse: Answer;
    switch (r.case) {
      case 'listServices':
        messageResponse = { case: 'listServicesResponse', value: { service: serviceNames.map((name) => ({ name })) } };
        break;
      case 'fileByFilename':
        messageResponse = found(files.get(r.value), `file ${r.value}`);
        break;
      case 'fileContainingSymbol':
        messageResponse = found(fileOfSymbol(r.value), `symbol ${r.value}`);
        break;
      case 'fileContainingExtension': {
        const msg = registry.getMessage(r.value.containingType);
        const ext = msg ? registry.getExtensionFor(msg, r.value.extensionNumber) : undefined;
        messageResponse = found(ext?.file, `extension ${r.value.extensionNumber} of ${r.value.containingType}`);
        break;
      }
      case 'allExtensionNumbersOfType': {
        const type = r.value;
        if (!registry.getMessage(type)) {
          messageResponse = notFound(`type ${type} not found`);
          break;
        }
        const numbers: number[] = [];
        for (const d of registry) if (d.kind === 'extension' && d.extendee.typeName === type) numbers.push(d.number);
        messageResponse = { case: 'allExtensionNumbersResponse', value: { baseTypeName: type, extensionNumber: numbers.sort((a, b) => a - b) } };
        break;
      }
      default:
        messageResponse = { case: 'errorResponse', value: { errorCode: Code.InvalidArgument, errorMessage: 'the request names no query' } };
    }
    return { validHost: req.host, originalRequest: req, messageResponse };
  };

  router.service(v1.ServerReflection, {
    async *serverReflectionInfo(requests) {
      for await (const req of requests) yield answer(req);
    },
  });
  router.service(v1alpha.ServerReflection, {
    async *serverReflectionInfo(requests) {
      for await (const req of requests) {
        const asV1 = fromBinary(v1.ServerReflectionRequestSchema, toBinary(v1alpha.ServerReflectionRequestSchema, req));
        const res = answer(asV1);
        yield fromBinary(v1alpha.ServerReflectionResponseSchema, toBinary(v1.ServerReflectionResponseSchema, create(v1.ServerReflectionResponseSchema, res)));
      }
    },
  });
}
