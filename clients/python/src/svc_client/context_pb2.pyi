from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

CONTEXT_MESSAGE_TYPE_HEARTBEAT: ContextMessageType
CONTEXT_MESSAGE_TYPE_SNAPSHOT: ContextMessageType
CONTEXT_MESSAGE_TYPE_UNSPECIFIED: ContextMessageType
CONTEXT_MESSAGE_TYPE_UPDATE: ContextMessageType
DESCRIPTOR: _descriptor.FileDescriptor

class ConsistencyProof(_message.Message):
    __slots__ = ["hashes", "to"]
    FROM_FIELD_NUMBER: _ClassVar[int]
    HASHES_FIELD_NUMBER: _ClassVar[int]
    TO_FIELD_NUMBER: _ClassVar[int]
    hashes: _containers.RepeatedScalarFieldContainer[bytes]
    to: int
    def __init__(self, to: _Optional[int] = ..., hashes: _Optional[_Iterable[bytes]] = ..., **kwargs) -> None: ...

class ContextExplanation(_message.Message):
    __slots__ = ["excluded", "selected"]
    class ExcludedEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: ScdExclusion
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[ScdExclusion, _Mapping]] = ...) -> None: ...
    class SelectedEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: ScdSelection
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[ScdSelection, _Mapping]] = ...) -> None: ...
    EXCLUDED_FIELD_NUMBER: _ClassVar[int]
    SELECTED_FIELD_NUMBER: _ClassVar[int]
    excluded: _containers.MessageMap[str, ScdExclusion]
    selected: _containers.MessageMap[str, ScdSelection]
    def __init__(self, selected: _Optional[_Mapping[str, ScdSelection]] = ..., excluded: _Optional[_Mapping[str, ScdExclusion]] = ...) -> None: ...

class ContextMessage(_message.Message):
    __slots__ = ["bundle_id", "bundle_version", "context_yaml", "resolved_bundle_ids", "scd_content", "scd_ids", "sequence", "tag", "timestamp", "type"]
    class ScdContentEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    BUNDLE_ID_FIELD_NUMBER: _ClassVar[int]
    BUNDLE_VERSION_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_YAML_FIELD_NUMBER: _ClassVar[int]
    RESOLVED_BUNDLE_IDS_FIELD_NUMBER: _ClassVar[int]
    SCD_CONTENT_FIELD_NUMBER: _ClassVar[int]
    SCD_IDS_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    TAG_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    bundle_id: str
    bundle_version: str
    context_yaml: str
    resolved_bundle_ids: _containers.RepeatedScalarFieldContainer[str]
    scd_content: _containers.ScalarMap[str, str]
    scd_ids: _containers.RepeatedScalarFieldContainer[str]
    sequence: int
    tag: str
    timestamp: int
    type: ContextMessageType
    def __init__(self, type: _Optional[_Union[ContextMessageType, str]] = ..., tag: _Optional[str] = ..., bundle_id: _Optional[str] = ..., bundle_version: _Optional[str] = ..., resolved_bundle_ids: _Optional[_Iterable[str]] = ..., context_yaml: _Optional[str] = ..., scd_ids: _Optional[_Iterable[str]] = ..., scd_content: _Optional[_Mapping[str, str]] = ..., sequence: _Optional[int] = ..., timestamp: _Optional[int] = ...) -> None: ...

class GetCheckpointRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class GetCheckpointResponse(_message.Message):
    __slots__ = ["note", "origin", "root_hash", "tree_size"]
    NOTE_FIELD_NUMBER: _ClassVar[int]
    ORIGIN_FIELD_NUMBER: _ClassVar[int]
    ROOT_HASH_FIELD_NUMBER: _ClassVar[int]
    TREE_SIZE_FIELD_NUMBER: _ClassVar[int]
    note: str
    origin: str
    root_hash: bytes
    tree_size: int
    def __init__(self, note: _Optional[str] = ..., origin: _Optional[str] = ..., tree_size: _Optional[int] = ..., root_hash: _Optional[bytes] = ...) -> None: ...

class GetConsistencyProofRequest(_message.Message):
    __slots__ = ["to"]
    FROM_FIELD_NUMBER: _ClassVar[int]
    TO_FIELD_NUMBER: _ClassVar[int]
    to: int
    def __init__(self, to: _Optional[int] = ..., **kwargs) -> None: ...

class GetInclusionProofRequest(_message.Message):
    __slots__ = ["leaf_index", "request_id", "tree_size"]
    LEAF_INDEX_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    TREE_SIZE_FIELD_NUMBER: _ClassVar[int]
    leaf_index: int
    request_id: str
    tree_size: int
    def __init__(self, leaf_index: _Optional[int] = ..., request_id: _Optional[str] = ..., tree_size: _Optional[int] = ...) -> None: ...

class InclusionProof(_message.Message):
    __slots__ = ["hashes", "leaf_index", "tree_size"]
    HASHES_FIELD_NUMBER: _ClassVar[int]
    LEAF_INDEX_FIELD_NUMBER: _ClassVar[int]
    TREE_SIZE_FIELD_NUMBER: _ClassVar[int]
    hashes: _containers.RepeatedScalarFieldContainer[bytes]
    leaf_index: int
    tree_size: int
    def __init__(self, leaf_index: _Optional[int] = ..., tree_size: _Optional[int] = ..., hashes: _Optional[_Iterable[bytes]] = ...) -> None: ...

class RequestContextRequest(_message.Message):
    __slots__ = ["api_key", "at_least_revision", "chain_id", "explain", "params", "parent_request_id", "task_type"]
    class ParamsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    API_KEY_FIELD_NUMBER: _ClassVar[int]
    AT_LEAST_REVISION_FIELD_NUMBER: _ClassVar[int]
    CHAIN_ID_FIELD_NUMBER: _ClassVar[int]
    EXPLAIN_FIELD_NUMBER: _ClassVar[int]
    PARAMS_FIELD_NUMBER: _ClassVar[int]
    PARENT_REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_TYPE_FIELD_NUMBER: _ClassVar[int]
    api_key: str
    at_least_revision: int
    chain_id: str
    explain: bool
    params: _containers.ScalarMap[str, str]
    parent_request_id: str
    task_type: str
    def __init__(self, api_key: _Optional[str] = ..., task_type: _Optional[str] = ..., params: _Optional[_Mapping[str, str]] = ..., chain_id: _Optional[str] = ..., parent_request_id: _Optional[str] = ..., explain: bool = ..., at_least_revision: _Optional[int] = ...) -> None: ...

class RequestContextResponse(_message.Message):
    __slots__ = ["agent_id", "audit_leaf_index", "content_revision", "context_bundle_ids", "error_code", "error_message", "explanation", "processing_time_ms", "request_id", "role_id", "scd_content", "scd_ids", "success", "task_type", "timestamp"]
    class ScdContentEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    AUDIT_LEAF_INDEX_FIELD_NUMBER: _ClassVar[int]
    CONTENT_REVISION_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_BUNDLE_IDS_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    EXPLANATION_FIELD_NUMBER: _ClassVar[int]
    PROCESSING_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    ROLE_ID_FIELD_NUMBER: _ClassVar[int]
    SCD_CONTENT_FIELD_NUMBER: _ClassVar[int]
    SCD_IDS_FIELD_NUMBER: _ClassVar[int]
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    TASK_TYPE_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    agent_id: str
    audit_leaf_index: int
    content_revision: int
    context_bundle_ids: _containers.RepeatedScalarFieldContainer[str]
    error_code: str
    error_message: str
    explanation: ContextExplanation
    processing_time_ms: int
    request_id: str
    role_id: str
    scd_content: _containers.ScalarMap[str, str]
    scd_ids: _containers.RepeatedScalarFieldContainer[str]
    success: bool
    task_type: str
    timestamp: int
    def __init__(self, success: bool = ..., request_id: _Optional[str] = ..., agent_id: _Optional[str] = ..., role_id: _Optional[str] = ..., task_type: _Optional[str] = ..., scd_ids: _Optional[_Iterable[str]] = ..., scd_content: _Optional[_Mapping[str, str]] = ..., timestamp: _Optional[int] = ..., processing_time_ms: _Optional[int] = ..., error_code: _Optional[str] = ..., error_message: _Optional[str] = ..., context_bundle_ids: _Optional[_Iterable[str]] = ..., audit_leaf_index: _Optional[int] = ..., content_revision: _Optional[int] = ..., explanation: _Optional[_Union[ContextExplanation, _Mapping]] = ...) -> None: ...

class ScdExclusion(_message.Message):
    __slots__ = ["bundle_id", "bundle_version", "import_path", "override", "reason", "referenced_by", "roles"]
    BUNDLE_ID_FIELD_NUMBER: _ClassVar[int]
    BUNDLE_VERSION_FIELD_NUMBER: _ClassVar[int]
    IMPORT_PATH_FIELD_NUMBER: _ClassVar[int]
    OVERRIDE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    REFERENCED_BY_FIELD_NUMBER: _ClassVar[int]
    ROLES_FIELD_NUMBER: _ClassVar[int]
    bundle_id: str
    bundle_version: str
    import_path: _containers.RepeatedScalarFieldContainer[str]
    override: bool
    reason: str
    referenced_by: _containers.RepeatedScalarFieldContainer[str]
    roles: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, reason: _Optional[str] = ..., roles: _Optional[_Iterable[str]] = ..., referenced_by: _Optional[_Iterable[str]] = ..., override: bool = ..., bundle_id: _Optional[str] = ..., bundle_version: _Optional[str] = ..., import_path: _Optional[_Iterable[str]] = ...) -> None: ...

class ScdSelection(_message.Message):
    __slots__ = ["bundle_id", "bundle_version", "governs", "import_path", "override", "reason", "role_id"]
    BUNDLE_ID_FIELD_NUMBER: _ClassVar[int]
    BUNDLE_VERSION_FIELD_NUMBER: _ClassVar[int]
    GOVERNS_FIELD_NUMBER: _ClassVar[int]
    IMPORT_PATH_FIELD_NUMBER: _ClassVar[int]
    OVERRIDE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    ROLE_ID_FIELD_NUMBER: _ClassVar[int]
    bundle_id: str
    bundle_version: str
    governs: _containers.RepeatedScalarFieldContainer[str]
    import_path: _containers.RepeatedScalarFieldContainer[str]
    override: bool
    reason: str
    role_id: str
    def __init__(self, reason: _Optional[str] = ..., role_id: _Optional[str] = ..., governs: _Optional[_Iterable[str]] = ..., bundle_id: _Optional[str] = ..., bundle_version: _Optional[str] = ..., import_path: _Optional[_Iterable[str]] = ..., override: bool = ...) -> None: ...

class SubscribeRequest(_message.Message):
    __slots__ = ["agent_id", "auth_token", "tag"]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    AUTH_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TAG_FIELD_NUMBER: _ClassVar[int]
    agent_id: str
    auth_token: str
    tag: str
    def __init__(self, tag: _Optional[str] = ..., agent_id: _Optional[str] = ..., auth_token: _Optional[str] = ...) -> None: ...

class ContextMessageType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
