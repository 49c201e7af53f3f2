"""The import page's form: one or more pipeline files, and whether to replace conflicting content."""

from typing import Any

from django import forms


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("widget", MultipleFileInput(attrs={"accept": ".jsonl,.json,.txt"}))
        super().__init__(*args, **kwargs)

    def clean(self, data: Any, initial: Any = None) -> list[Any]:
        single = super().clean
        if isinstance(data, (list, tuple)):
            return [single(d, initial) for d in data]
        return [single(data, initial)]


class ImportForm(forms.Form):
    # A declared field, which the metaclass takes off the class: BaseForm.files stays the uploads.
    files = MultipleFileField(label="Pipeline files (JSON Lines)")  # type: ignore[assignment]
    replace = forms.BooleanField(
        required=False,
        label="Replace conflicting candidates, source tasks and searches with the uploaded content",
    )
