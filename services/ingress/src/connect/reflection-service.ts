import type { ConnectRouter } from "@connectrpc/connect";
import { Code } from "@connectrpc/connect";
import { create, fromBinary, toBinary, type DescService } from "@bufbuild/protobuf";
import { reflectionV1 as v1, reflectionV1alpha as v1alpha } from "@shoal/proto";
import { DescriptorIndex } from "./descriptor-index.js";

type Answer = v1.ServerReflectionResponse["messageResponse"];

/**
 * gRPC server reflection, `grpc.reflection.v1` and the identical `v1alpha` (which
 * grpcio-reflection's client and older grpcurl speak), describing `services` and the
 * reflection services themselves.
 */
export function reflectionRoutes(
  services: readonly DescService[],
): (router: ConnectRouter) => void {
  const served = [...services, v1.ServerReflection, v1alpha.ServerReflection];
  const index = new DescriptorIndex(served.map((s) => s.file));
  const names = served.map((s) => s.typeName);
  return (router) => {
    router.service(v1.ServerReflection, {
      async *serverReflectionInfo(requests) {
        const sent = new Set<string>();
        for await (const req of requests) yield respond(index, names, req, sent);
      },
    });
    router.service(v1alpha.ServerReflection, {
      async *serverReflectionInfo(requests) {
        const sent = new Set<string>();
        // Same messages on the wire: answer through v1 and re-read the bytes.
        for await (const req of requests) {
          const asV1 = fromBinary(
            v1.ServerReflectionRequestSchema,
            toBinary(v1alpha.ServerReflectionRequestSchema, req),
          );
          yield fromBinary(
            v1alpha.ServerReflectionResponseSchema,
            toBinary(v1.ServerReflectionResponseSchema, respond(index, names, asV1, sent)),
          );
        }
      },
    });
  };
}

function respond(
  index: DescriptorIndex,
  services: readonly string[],
  req: v1.ServerReflectionRequest,
  sent: Set<string>,
): v1.ServerReflectionResponse {
  return create(v1.ServerReflectionResponseSchema, {
    validHost: req.host,
    originalRequest: req,
    messageResponse: answer(index, services, req.messageRequest, sent),
  });
}

function answer(
  index: DescriptorIndex,
  services: readonly string[],
  request: v1.ServerReflectionRequest["messageRequest"],
  sent: Set<string>,
): Answer {
  switch (request.case) {
    case "listServices":
      return {
        case: "listServicesResponse",
        value: create(v1.ListServiceResponseSchema, {
          service: services.map((name) => ({ name })),
        }),
      };
    case "fileByFilename": {
      const file = index.fileByName(request.value);
      return file === undefined
        ? notFound(`file "${request.value}" not found`)
        : files(index.withDependencies(file, sent));
    }
    case "fileContainingSymbol": {
      const file = index.fileContainingSymbol(request.value);
      return file === undefined
        ? notFound(`symbol "${request.value}" not found`)
        : files(index.withDependencies(file, sent));
    }
    case "fileContainingExtension": {
      const { containingType, extensionNumber } = request.value;
      const file = index.fileContainingExtension(containingType, extensionNumber);
      return file === undefined
        ? notFound(`extension ${extensionNumber} of "${containingType}" not found`)
        : files(index.withDependencies(file, sent));
    }
    case "allExtensionNumbersOfType":
      return index.message(request.value) === undefined
        ? notFound(`message type "${request.value}" not found`)
        : {
            case: "allExtensionNumbersResponse",
            value: create(v1.ExtensionNumberResponseSchema, {
              baseTypeName: request.value,
              extensionNumber: index.extensionNumbers(request.value),
            }),
          };
    case undefined:
      return error(Code.InvalidArgument, "no request set");
  }
}

function files(fileDescriptorProto: Uint8Array[]): Answer {
  return {
    case: "fileDescriptorResponse",
    value: create(v1.FileDescriptorResponseSchema, { fileDescriptorProto }),
  };
}

function notFound(message: string): Answer {
  return error(Code.NotFound, message);
}

function error(code: Code, errorMessage: string): Answer {
  return {
    case: "errorResponse",
    value: create(v1.ErrorResponseSchema, { errorCode: code, errorMessage }),
  };
}
