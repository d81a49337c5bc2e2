# Imported human labels: Study.source and is_public, ImportedField, ImportedLabel.

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0001_initial'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='ImportedField',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(max_length=100)),
                ('unit_type', models.CharField(max_length=10)),
                ('scale_min', models.FloatField(blank=True, null=True)),
                ('scale_max', models.FloatField(blank=True, null=True)),
                ('level', models.CharField(choices=[('nominal', 'Nominal'), ('ordinal', 'Ordinal'), ('interval', 'Interval'), ('ratio', 'Ratio'), ('set', 'set (labels joined by |; MASI distance)')], max_length=10)),
                ('description', models.TextField(blank=True)),
            ],
            options={
                'ordering': ['study', 'pk'],
            },
        ),
        migrations.CreateModel(
            name='ImportedLabel',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('unit_type', models.CharField(max_length=10)),
                ('unit_id', models.CharField(max_length=300)),
                ('dialogue_id', models.CharField(help_text="the benchmark dialogue's id", max_length=200)),
                ('system', models.CharField(blank=True, help_text='blank when unknown', max_length=200)),
                ('annotator', models.CharField(blank=True, help_text='blank: a label aggregated over annotators', max_length=200)),
                ('field', models.CharField(max_length=100)),
                ('value_num', models.FloatField(blank=True, null=True)),
                ('value_text', models.CharField(blank=True, max_length=500)),
            ],
            options={
                'ordering': ['study', 'pk'],
            },
        ),
        migrations.AddField(
            model_name='study',
            name='is_public',
            field=models.BooleanField(default=False, help_text='its metric leaderboard is public (reports stay private)'),
        ),
        migrations.AddField(
            model_name='study',
            name='source',
            field=models.CharField(default='native', help_text='native (labelled here) or imported:<data set> (finished labels, no items)', max_length=100),
        ),
        migrations.AddConstraint(
            model_name='study',
            constraint=models.CheckConstraint(condition=models.Q(('source', 'native'), ('source__startswith', 'imported:'), _connector='OR'), name='study_source_valid'),
        ),
        migrations.AddField(
            model_name='importedfield',
            name='study',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='imported_fields', to='annotation.study'),
        ),
        migrations.AddField(
            model_name='importedlabel',
            name='study',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='imported_labels', to='annotation.study'),
        ),
        migrations.AddConstraint(
            model_name='importedfield',
            constraint=models.UniqueConstraint(fields=('study', 'name'), name='importedfield_once'),
        ),
        migrations.AddConstraint(
            model_name='importedfield',
            constraint=models.CheckConstraint(condition=models.Q(('unit_type__in', ('turn', 'dialogue', 'item'))), name='importedfield_unit_type'),
        ),
        migrations.AddConstraint(
            model_name='importedfield',
            constraint=models.CheckConstraint(condition=models.Q(('level__in', ('nominal', 'ordinal', 'interval', 'ratio', 'set'))), name='importedfield_level'),
        ),
        migrations.AddConstraint(
            model_name='importedfield',
            constraint=models.CheckConstraint(condition=models.Q(('scale_min__isnull', True), ('scale_max__isnull', True), ('scale_min__lte', models.F('scale_max')), _connector='OR'), name='importedfield_scale_ordered'),
        ),
        migrations.AddIndex(
            model_name='importedlabel',
            index=models.Index(fields=['study', 'field'], name='annotation__study_i_0f3f40_idx'),
        ),
        migrations.AddConstraint(
            model_name='importedlabel',
            constraint=models.UniqueConstraint(fields=('study', 'unit_type', 'unit_id', 'annotator', 'field'), name='importedlabel_once'),
        ),
        migrations.AddConstraint(
            model_name='importedlabel',
            constraint=models.CheckConstraint(condition=models.Q(('unit_type__in', ('turn', 'dialogue', 'item'))), name='importedlabel_unit_type'),
        ),
        migrations.AddConstraint(
            model_name='importedlabel',
            constraint=models.CheckConstraint(condition=models.Q(('value_num__isnull', False), models.Q(('value_text', ''), _negated=True), _connector='OR'), name='importedlabel_has_a_value'),
        ),
    ]
